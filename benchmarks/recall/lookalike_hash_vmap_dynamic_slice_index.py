# Report: https://github.com/jax-ml/jax/issues/292
# What the user did: vmapped the start index of lax.dynamic_slice_in_dim over states (the unhashable BatchTracer error is long fixed)
# Raises: silent
import jax
import jax.numpy as jnp
from jax import lax


def absorbing_block(T, idx, size=2):
    rows = lax.dynamic_slice_in_dim(T, idx, size, axis=0)
    return lax.dynamic_slice_in_dim(rows, idx, size, axis=1)


T = jnp.arange(36.0).reshape(6, 6) / 36.0
print(jax.vmap(absorbing_block, in_axes=(None, 0))(T, jnp.array([0, 2, 4])).shape)
