from concurrent.futures import ThreadPoolExecutor

import jax
import jax.numpy as jnp

POOL = ThreadPoolExecutor(2)


def _square(v):
    return v * v


@jax.jit
def step(xs):
    results = list(POOL.map(_square, xs))
    return jnp.stack(results)


print(step(jnp.arange(3.0)))
