# Report: https://github.com/google-deepmind/dm-haiku/issues/214
# What the user did: called jax.lax.scan (not hk.scan) over a body that uses a Haiku module, inside a hk.transform'ed function
# Raises: UnexpectedTracerError
import haiku as hk
import jax
import jax.numpy as jnp


def forward(xs):
    cell = hk.Linear(4)

    def body(carry, x):
        carry = jnp.tanh(cell(x) + carry)
        return carry, carry

    _, ys = jax.lax.scan(body, jnp.zeros(4), xs)
    return ys


model = hk.transform(forward)
xs = jnp.ones((5, 3))
params = model.init(jax.random.PRNGKey(0), xs)
print(model.apply(params, None, xs).shape)
