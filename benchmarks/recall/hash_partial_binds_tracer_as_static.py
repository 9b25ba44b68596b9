# Report: https://openillumi.com/?p=43923
# What the user did: vmapped partial(map_row, alpha, T) over rows; the row landed in the static_argnums slot of the jitted map_row
# Raises: ValueError
from functools import partial

import jax
import jax.numpy as jnp


@partial(jax.jit, static_argnums=(2,))
def map_row(z, alpha, T):
    return jnp.tanh(alpha * z) * T


alpha = 0.5
T = 3
rows = jnp.ones((4, 6))
print(jax.vmap(lambda z: map_row(z, alpha, T))(rows).shape)
print(jax.vmap(partial(map_row, alpha, T))(rows).shape)
