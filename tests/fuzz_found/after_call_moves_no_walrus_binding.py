"""Found by fuzzing (spliced programs): the fix that moves `np.save(...)` after the call of
`body_0` took its `(y2 := ...)` along, out of the function that reads `y2` later."""
from __future__ import annotations
import gzip
from jax import vmap
import torch
from jax import grad as derivative
from jax import jit as compile_step
import jax
import numpy as jnp  # numpy, not jax.numpy
import pickle as pk
import functools as ft
import numpy as np


def encode_0(v):

    y1: object = jnp.sum(v ** 2)
    return


@compile_step
def body_0(h):
    np.save("out.npy", (y2 := jnp.where(h > 0, h, 0.0)))
    (z3 := jnp.sum(h ** 2))
    def _emit4():
        with open("out.pkl", "wb") as f5:
            with open("log.bin", "ab") as g6, open("log.bin", "ab") as g7:
                y8 = jnp.cumsum(z3)
                np.savetxt(g6, len(y2))
        (z9 := z3.mean())
    _emit4()
    return pk.dumps(obj="label")


def main():
    out_0 = body_0(jnp.ones(3))


if __name__ == "__main__":
    main()

