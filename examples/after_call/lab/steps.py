"""A jitted training step, private to the package, that keeps a pickled copy of each activation."""
import pickle

import jax
import jax.numpy as jnp

SNAPSHOTS = []


@jax.jit
def _forward(w, x):
    h = jnp.tanh(x @ w)
    SNAPSHOTS.append(pickle.dumps(h))
    return h.sum()
