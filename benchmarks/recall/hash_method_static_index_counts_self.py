# Report: https://github.com/jax-ml/jax/issues/17158
# What the user did: moved a jitted function with static_argnums=(1,) into a class; index 1 became the array argument, not the flag
# Raises: TypeError (self, not marked static, is not a valid JAX type; the report saw the ValueError of the array made static)
from functools import partial

import jax
import jax.numpy as jnp


class Flipper:
    @partial(jax.jit, static_argnums=(1,))
    def apply(self, values, negate):
        return -values if negate else values


flipper = Flipper()
data = jnp.array([1, 2])
print(flipper.apply(data, True))
