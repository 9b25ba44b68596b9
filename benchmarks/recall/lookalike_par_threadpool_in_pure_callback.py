# Report: https://github.com/jax-ml/jax/issues/24756
# What the user did: inside a jax.pure_callback host function (vectorized over a vmapped batch), fanned the batch out to a module-level ThreadPoolExecutor singleton
# Raises: none (a look-alike that runs correctly: the callback receives NumPy arrays, never tracers)
import atexit
from concurrent.futures import ThreadPoolExecutor

import jax
import jax.numpy as jnp
import numpy as np


class ThreadPoolSingleton:
    _instance = None

    @classmethod
    def get_instance(cls):
        if cls._instance is None:
            cls._instance = ThreadPoolExecutor(max_workers=4)
            atexit.register(cls._instance.shutdown)
        return cls._instance


def kernel(x):
    return np.sin(x) * 2.0


def host_batched(x):
    pool = ThreadPoolSingleton.get_instance()
    rows = list(pool.map(kernel, np.asarray(x)))
    return np.stack(rows).astype(x.dtype)


def f(x):
    shape = jax.ShapeDtypeStruct(x.shape, x.dtype)
    return jax.pure_callback(host_batched, shape, x, vmap_method="broadcast_all")


print(jax.jit(jax.vmap(f))(jnp.arange(6.0).reshape(3, 2)))
