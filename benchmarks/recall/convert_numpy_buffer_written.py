import jax
import jax.numpy as jnp
import numpy as np

HISTORY = np.zeros((3, 2))


@jax.jit
def step(w, i):
    w = w * 0.9
    HISTORY[i] = w
    return w


w = jnp.ones(2)
for i in range(3):
    w = step(w, i)
print(HISTORY)
