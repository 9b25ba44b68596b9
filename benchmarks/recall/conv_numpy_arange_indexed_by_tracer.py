# Report: https://github.com/jax-ml/jax/issues/553
# What the user did: built an index table with NumPy's arange inside a jitted function and indexed it with the traced argument
# Raises: TracerArrayConversionError
import jax
import jax.numpy as jnp
import numpy as np


def gather_ids(idx):
    table = np.arange(idx.shape[0])[idx]
    return table


print(gather_ids(np.array([0, 1, 2], dtype=np.int32)))
print(jax.jit(gather_ids)(jnp.array([0, 1, 2], dtype=jnp.int32)))
