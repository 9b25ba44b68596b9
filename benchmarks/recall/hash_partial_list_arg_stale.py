# Report: https://openillumi.com/en/en-jax-jit-list-static-arg-best-practice
# What the user did: static_argnames rejected a list, so they bound it with functools.partial before jit and later appended to it
# Raises: silent
from functools import partial

import jax
import jax.numpy as jnp


def weighted_sum(x, weights):
    total = 0.0
    for w in weights:
        total = total + w * x
    return total


weights = [1.0, 2.0]
fast_sum = jax.jit(partial(weighted_sum, weights=weights))
print(fast_sum(jnp.array(1.0)))
weights.append(10.0)
print(fast_sum(jnp.array(1.0)))
