# Report: https://github.com/google/flax/pull/4333
# What the user did: a stateful Flax NNX Counter module, captured by closure, updated inside a plain jax.jit function
# Raises: TraceContextError (Flax NNX refuses to mutate a Module from another trace level)
import jax
import jax.numpy as jnp
from flax import nnx


class Count(nnx.Variable):
    pass


class Counter(nnx.Module):
    def __init__(self):
        self.count = Count(jnp.array(0))

    def __call__(self, x):
        self.count.value += x
        return self.count.value


counter = Counter()


@jax.jit
def increment(x):
    return counter(x)


increment(jnp.array(1))
print(counter.count.value + 1)
