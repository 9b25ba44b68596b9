# Report: https://github.com/jax-ml/jax/issues/5186
# What the user did: jitted a helper returning jnp.arange(0, n, 1) and called it with n=5 (a traced stop after upgrading jax)
# Raises: ConcretizationTypeError
import jax
import jax.numpy as jnp


def pixel_grid(n):
    return jnp.arange(0, n, 1)


pixel_grid_jit = jax.jit(pixel_grid)

print(pixel_grid(5))
print(pixel_grid_jit(5))
