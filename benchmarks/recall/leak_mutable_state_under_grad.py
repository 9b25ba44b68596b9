# Report: https://github.com/pyro-ppl/numpyro/pull/1935
# What the user did: a model's batch-norm layer returned updated running statistics under jax.grad, and the model stored them as the module's mutable state in a trace kept after the gradient
# Raises: UnexpectedTracerError
import jax
import jax.numpy as jnp

trace = {"nn$state": {"mean": jnp.zeros(3)}}


def batch_norm(params, state, x):
    mean = 0.9 * state["mean"] + 0.1 * jnp.mean(x * params, axis=0)
    return (x * params - mean), {"mean": mean}


def model(params, x, y):
    out, new_state = batch_norm(params, trace["nn$state"], x)
    trace["nn$state"] = new_state
    return jnp.mean((out.sum(axis=1) - y) ** 2)


x = jnp.ones((4, 3))
y = jnp.zeros(4)
g = jax.grad(model)(jnp.ones(3), x, y)
print(g, trace["nn$state"]["mean"] + 1)
