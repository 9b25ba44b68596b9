import jax
import jax.numpy as jnp
import numpy as np


@jax.jit
def step(x):
    y = x * 2
    np.testing.assert_allclose(y, x * 2)
    return y


print(step(jnp.arange(3.0)))
