# Report: https://github.com/jax-ml/jax/issues/6233
# What the user did: jitted a jnp.arange(-n, n) helper with static_argnums=0 and passed it a device scalar from jnp.add
# Raises: ValueError
import jax
import jax.numpy as jnp


def symmetric_range(n):
    return jnp.arange(-n, n)


symmetric_range_jit = jax.jit(symmetric_range, static_argnums=0)

n_int = 5
print(symmetric_range(n_int))
print(symmetric_range_jit(n_int))

n_device = jnp.add(4, 1)
print(symmetric_range(n_device))
print(symmetric_range_jit(n_device))
