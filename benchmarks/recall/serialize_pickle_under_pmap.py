import pickle

import jax
import jax.numpy as jnp


def per_device(x):
    with open("/tmp/p.pkl", "wb") as f:
        pickle.dump(x, f)
    return x


jax.pmap(per_device)(jnp.ones((1, 2)))
