# Report: https://github.com/jax-ml/jax/issues/20254
# What the user did: tried np.array(x) in a try/except inside a jitted function, falling back to None when it fails
# Raises: silent
import jax
import numpy as np


def to_host(x):
    try:
        return np.array(x)
    except Exception:
        return None


print(to_host([1]))
print(jax.jit(to_host)([1]))
