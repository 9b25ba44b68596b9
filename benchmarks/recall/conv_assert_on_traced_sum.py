# Report: https://github.com/jax-ml/jax/pull/8947
# What the user did: asserted a sum built in a generator was positive inside a jitted function
# Raises: TracerBoolConversionError
import jax
import jax.numpy as jnp

N = 10


@jax.jit
def total():
    result = sum(jnp.add(1, 1) for _ in range(N))
    assert result > 0
    return result


print(total())
