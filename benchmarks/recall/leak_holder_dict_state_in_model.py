# Report: https://github.com/pyro-ppl/numpyro/pull/2005
# What the user did: the model stored an Equinox-style layer's new state in a dict from the enclosing test (`mutable_holder["state"] = state`) while SVI traced it
# Raises: UnexpectedTracerError
import jax
import jax.numpy as jnp

mutable_holder = {"state": jnp.zeros(3)}


def batch_norm(x, state):
    mean = 0.9 * state + 0.1 * x.mean(axis=0)
    return (x - mean), mean


def model(params, x):
    y, state = batch_norm(x * params, mutable_holder["state"])
    mutable_holder["state"] = state
    return jnp.sum(y**2)


loss_and_grad = jax.jit(jax.value_and_grad(model))
loss, g = loss_and_grad(jnp.ones(3), jnp.ones((4, 3)))
print(loss_and_grad(jnp.ones(3), jnp.ones((4, 3))))
print(mutable_holder["state"] + 1)
