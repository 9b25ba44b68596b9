import jax
import jax.numpy as jnp


class Memo:
    def __init__(self):
        self.table = {}

    def get(self, k, f):
        if k not in self.table:
            self.table[k] = f(k)
        return self.table[k]


memo = Memo()


@jax.jit
def g(x):
    return memo.get(x, jnp.sin)


print(g(jnp.float32(1.0)))
