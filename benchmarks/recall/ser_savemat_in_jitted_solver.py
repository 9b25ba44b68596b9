# Report: https://github.com/jax-ml/jax/issues/13815
# What the user did: scipy.io.savemat of jax arrays as if they were NumPy arrays; here from inside the jitted solver
# Raises: TracerArrayConversionError
import jax
import jax.numpy as jnp
from scipy.io import savemat


@jax.jit
def simulate(c0):
    field = jnp.outer(jnp.sin(jnp.linspace(0, 3, 4)), c0)
    savemat("/tmp/jax13815_test.mat", {"a": field})
    return field.sum()


print(simulate(jnp.ones(4)))
