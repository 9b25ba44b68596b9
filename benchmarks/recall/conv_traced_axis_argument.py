# Report: https://github.com/jax-ml/jax/pull/7952
# What the user did: passed the reduction axis of a jnp.sum as an argument of the jitted function, so the axis was traced
# Raises: TracerIntegerConversionError
import jax
import jax.numpy as jnp


@jax.jit
def reduce_along(x, y):
    return jnp.sum(x, axis=(y,))


print(reduce_along(jnp.ones((2, 3)), 1))
