import jax
import jax.numpy as jnp
import numpy as np

COUNTS = np.zeros(4)


@jax.jit
def step(x, i):
    COUNTS[i] = 1.0
    return x + 1


print(step(jnp.ones(2), 2))
print(COUNTS)
