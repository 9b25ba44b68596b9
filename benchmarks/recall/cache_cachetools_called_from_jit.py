import cachetools
import jax
import jax.numpy as jnp

CACHE = cachetools.LRUCache(maxsize=10)


@cachetools.cached(CACHE)
def embed(x):
    return x * 2


@jax.jit
def f(x):
    return embed(x) + 1


f(jnp.ones(2))
