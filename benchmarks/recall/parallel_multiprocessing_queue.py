import multiprocessing

import jax
import jax.numpy as jnp

q = multiprocessing.Queue()


@jax.jit
def f(x):
    q.put(x)
    return x


f(jnp.ones(2))
print(q.get())
