# Report: https://github.com/jax-ml/jax/pull/5853
# What the user did: indexed a Python list of per-step constants with the traced step number inside a jitted update
# Raises: TracerIntegerConversionError
import jax
import jax.numpy as jnp

LEARNING_RATES = [1.0, 0.5, 0.25]


@jax.jit
def update(params, grads, step):
    lr = LEARNING_RATES[step]
    return params - lr * grads


print(update(jnp.ones(3), jnp.ones(3), 0))
