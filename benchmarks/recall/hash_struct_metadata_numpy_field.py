# Report: https://github.com/jax-ml/jax/issues/7826
# What the user did: kept a NumPy array in a flax.struct field marked pytree_node=False and passed two such models to a jitted function
# Raises: ValueError
import jax
import numpy as np
from flax import struct


@struct.dataclass
class Emitter:
    weights: np.ndarray = struct.field(pytree_node=False)


@jax.jit
def emit(model):
    return 1.0


first = Emitter(np.ones(10))
second = Emitter(np.ones(10))

print(emit(first))
print(emit(second))
