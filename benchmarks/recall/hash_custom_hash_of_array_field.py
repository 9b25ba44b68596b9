# Report: https://github.com/jax-ml/jax/issues/39858
# What the user did: followed the gotchas-page CustomClass: static self whose __hash__ hashes a tuple holding a jnp array field
# Raises: ValueError
from functools import partial

import jax
import jax.numpy as jnp


class Scaler:
    def __init__(self, x, mul):
        self.x = x
        self.mul = mul

    @partial(jax.jit, static_argnums=0)
    def calc(self, y):
        if self.mul:
            return self.x * y
        return y

    def __hash__(self):
        return hash((self.x, self.mul))

    def __eq__(self, other):
        return isinstance(other, Scaler) and (self.x, self.mul) == (other.x, other.mul)


scaler = Scaler(jnp.array(2.0), True)
print(scaler.calc(3.0))
