"""The only alias of `jax` (`import jax as J`) is mentioned by no statement: the slice dropped
it, so the hoist saw `jax` shadowed by a local and gave up, while the whole file has a fix."""
import jax as J
import numpy
from jax import jit as compile_step
import jax.numpy as jnp


class _Pipeline:
    def jit(self, fn):
        return fn


def pack_0(rows):
    jax = _Pipeline()

    def encode(row):
        def _inner3(a):
            numpy.save("out.npy", arr=a * 2)
            return a

        return compile_step(_inner3)(row)

    return [encode(r) for r in rows]


print(pack_0([jnp.ones(2)]))
