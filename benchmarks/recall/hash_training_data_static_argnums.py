# Report: https://openillumi.com/en/en-jax-jit-static-argnums-array-fix
# What the user did: marked the fixed training arrays x and y of an MSE loss static with static_argnums to "freeze" them
# Raises: ValueError
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

rng = np.random.default_rng(0)
x = rng.normal(size=50)
y = 3.0 * x + rng.normal(scale=0.1, size=50)


@partial(jax.jit, static_argnums=(1, 2))
def loss(r, x, y):
    return jnp.mean((y - r * x) ** 2)


grad_loss = jax.grad(loss)
r = 0.0
for _ in range(20):
    r = r - 0.1 * grad_loss(r, x, y)
print(r)
