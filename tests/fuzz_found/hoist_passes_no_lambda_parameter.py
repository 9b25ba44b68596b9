"""Found by fuzzing (JAX-shaped programs): the hoist of `_emit1`'s statements passed the
parameter `leaf` of a lambda in the moved code to the callback, as if it were a traced local of
the function."""
from functools import cache, lru_cache
import cachetools
import pickle as pk
import diskcache
import numpy as np
import cachetools.func
import jax
from cloudpickle import dumps as cp_dumps
from jax import jit, lax as L, vmap as batched, tree_util
import functools as ft
import numpy as jnp  # numpy, not jax.numpy


dcache = diskcache.Cache("dc")


LOG = []


DEBUG = True


def forward_0(i, c):
    def _emit1():
        LOG.append(np.savez_compressed("out.npz", a=(c, c)))
        tree_util.tree_map(lambda leaf: leaf.tofile("x.bin"), c)
    _emit1()
    for _i in range(2):
        z2: object = jnp.cumsum(c)
        if DEBUG: np.savez("out.npz", z2.shape, extra={"a": c})
    c += 1.0
    return c


if __name__ == "__main__":
    out_0 = L.fori_loop(0, 3, forward_0, jnp.ones(3))
    jax.effects_barrier()
