from concurrent.futures import ThreadPoolExecutor

import jax
import jax.numpy as jnp


def work(v):
    return float(v) * 2


@jax.jit
def f(xs):
    with ThreadPoolExecutor(2) as pool:
        out = list(pool.map(work, xs))
    return jnp.asarray(out)


f(jnp.ones(2))
