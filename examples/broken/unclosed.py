"""A syntax error: jaxfix names the file and the position, and moves on."""
import pickle

import jax


@jax.jit
def step(x:
    return pickle.dumps(x)
