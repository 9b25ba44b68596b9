"""Small JAX programs that the command-line tests share: one finding each (or none)."""

# JF101 without a fix: the serialized value is returned.
RETURNED = """\
import pickle

import jax


@jax.jit
def encode(x):
    return pickle.dumps(x)
"""


# JF101 with an unsafe fix (a host callback).
HOISTABLE = """\
import pickle

import jax

BLOBS = []


@jax.jit
def step(x):
    y = x * 2
    BLOBS.append(pickle.dumps(y))
    return y
"""


# JF102 with a safe fix (the decorator and its import go).
CACHED = """\
import functools

import jax


@functools.lru_cache
@jax.jit
def f(x):
    return x + 1
"""


# No finding: pickling a concrete array on the host.
CLEAN = """\
import pickle

import jax.numpy as jnp

payload = pickle.dumps(jnp.ones(3))
"""


def large_module(size: int) -> str:
    """A module of at least `size` bytes: many small untraced functions, then one jitted
    function that pickles its argument (JF101, on the last lines but one)."""
    helper = "\n\ndef helper_{i}(x):\n    y = x * {i}\n    return y + 1\n"
    tail = "\n\n@jax.jit\ndef last(x):\n    BLOBS.append(pickle.dumps(x))\n    return x\n"
    parts = ["import pickle\nimport jax\nBLOBS = []\n"]
    length = len(parts[0]) + len(tail)
    while length < size:
        parts.append(helper.format(i=len(parts) - 1))
        length += len(parts[-1])
    parts.append(tail)
    return "".join(parts)
