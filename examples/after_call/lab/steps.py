"""A jitted training step that keeps a pickled copy of each activation."""
import pickle

import jax
import jax.numpy as jnp

SNAPSHOTS = []


@jax.jit
def forward(w, x):
    h = jnp.tanh(x @ w)
    SNAPSHOTS.append(pickle.dumps(h))
    return h.sum()
