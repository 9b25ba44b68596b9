# Report: https://github.com/jax-ml/jax/issues/13992
# What the user did: mutated a hashable static argument between calls of a jitted function; the cache returned the old program
# Raises: silent
from functools import partial

import jax


class Offset:
    def __init__(self, val):
        self.val = val

    def __hash__(self):
        return hash(self.val)

    def __eq__(self, other):
        return isinstance(other, Offset) and self.val == other.val


@partial(jax.jit, static_argnums=0)
def shift(offset, y):
    return y + offset.val


offset = Offset(100)
print(shift(offset, 1))
offset.val = 0
print(shift(offset, 1))
print(shift(offset, 1))
