# Report: https://github.com/google/flax/issues/3997
# What the user did: wrapped a stateful NNX Counter module itself in nnx.jit (`nnx.jit(counter)()`), so its __call__ mutates the captured module instead of an argument
# Raises: TraceContextError (Flax NNX refuses to mutate a Variable from another trace level)
import jax.numpy as jnp
from flax import nnx


class Count(nnx.Variable):
    pass


class Counter(nnx.Module):
    def __init__(self):
        self.count = Count(jnp.array(0))

    def __call__(self):
        self.count.value += 1


counter = Counter()
counter()
nnx.jit(counter)()
print(counter.count.value)
