# Report: https://github.com/jax-ml/jax/issues/7142
# What the user did: passed a function that calls a Haiku module to jax.experimental.ode.odeint (a JAX transform) inside a hk.transform'ed, vmapped model
# Raises: UnexpectedTracerError
import haiku as hk
import jax
import jax.numpy as jnp
from jax.experimental.ode import odeint


def forward(y0):
    layer = hk.Linear(2)

    def odefunc(y, t):
        return jnp.tanh(layer(y))

    ys = odeint(odefunc, y0, jnp.array([0.0, 1.0]))
    return ys[-1]


model = hk.without_apply_rng(hk.transform(forward))
y0 = jnp.ones((3, 2))
params = model.init(jax.random.PRNGKey(0), y0[0])
print(jax.vmap(model.apply, in_axes=(None, 0))(params, y0))
