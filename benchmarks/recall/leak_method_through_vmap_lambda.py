import jax
import jax.numpy as jnp


class Model:
    def __init__(self):
        self.cache = []

    def apply(self, x):
        self.cache.append(x)
        return x * 2


m = Model()
out = jax.vmap(lambda x: m.apply(x))(jnp.ones(3))
print(m.cache[0] + 1)
