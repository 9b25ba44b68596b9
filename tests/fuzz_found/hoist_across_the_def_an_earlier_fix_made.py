"""Found by fuzzing (spliced programs): the two host statements of `_emit1` are hoisted in
two passes; the second moved `STATE.last = ...` together with the first pass' callback of
`_host_pk_dumps`, above the `def` it calls (a name left without a binding)."""
from __future__ import annotations

import functools
from jax import jit as compile_step, lax, vmap as batched, grad, tree_util
import numpy as np
import gzip
from jax import numpy as jnp
import pickle as pk
import torch
from cloudpickle import dumps as cp_dumps
import jax
import cloudpickle


class _State:
    last = None


STATE = _State()


def encode_0(v, u):
    def _emit1():
        STATE.last = cloudpickle.dumps(u, protocol=4)
        with gzip.open("out.gz", "wb") as f2:
            f2.write(pk.dumps([u, v]))
    _emit1()
    payload3 = pk.dumps((u, u))
    jax.debug.callback(lambda a: print(a), v)
    return tree_util.tree_map(lambda leaf: cp_dumps(leaf), v)


@functools.lru_cache
def forward_0(batch, state):
    r4 = encode_0(state, batch)
    return pk.dumps(obj=state)


if __name__ == "__main__":
    out_0 = grad(forward_0, argnums=(0,))(jnp.ones(3), jnp.ones(3))
    blob = cloudpickle.dumps(out_0)
    jax.effects_barrier()

