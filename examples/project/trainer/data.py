"""Host-side data loading: plain NumPy arrays, nothing here is traced by jax."""
import pickle

import numpy as jnp  # NumPy under a jax-like name: everything here is concrete


def make_dataset(seed=0, n=64, features=4, classes=3):
    """A random classification problem: Gaussian inputs, labels from a random projection."""
    rng = jnp.random.default_rng(seed)
    x = rng.normal(size=(n, features)).astype(jnp.float32)
    y = jnp.argmax(x @ rng.normal(size=(features, classes)), axis=1).astype(jnp.int32)
    return x, y


def save_dataset(path, x, y):
    """Pickle the arrays to `path`."""
    with open(path, "wb") as f:
        pickle.dump({"x": x, "y": y}, f)


def load_dataset(path):
    """Inverse of `save_dataset`."""
    with open(path, "rb") as f:
        d = pickle.load(f)
    return d["x"], d["y"]


def batches(x, y, batch_size):
    """Stack full batches on a leading axis, the layout `lax.scan` iterates over."""
    steps = len(x) // batch_size
    keep = steps * batch_size
    return (x[:keep].reshape(steps, batch_size, -1), y[:keep].reshape(steps, batch_size))
