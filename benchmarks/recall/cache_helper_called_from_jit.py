import functools

import jax
import jax.numpy as jnp


@functools.cache
def scale(x):
    return x * 2


@jax.jit
def f(x):
    return scale(x) + 1


f(jnp.ones(2))
