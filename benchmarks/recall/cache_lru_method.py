import functools

import jax
import jax.numpy as jnp


class Model:
    @functools.lru_cache(maxsize=None)
    def features(self, x):
        return x * 2

    def __call__(self, x):
        return self.features(x) + 1


m = Model()
print(jax.jit(lambda x: m(x))(jnp.ones(2)))
