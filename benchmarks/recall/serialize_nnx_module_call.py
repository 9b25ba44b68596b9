import pickle

import jax
import jax.numpy as jnp
from flax import nnx


class MLP(nnx.Module):
    def __init__(self, rngs):
        self.linear = nnx.Linear(2, 2, rngs=rngs)

    def __call__(self, x):
        y = self.linear(x)
        pickle.dumps(y)
        return y


@nnx.jit
def step(model, x):
    return model(x)


step(MLP(nnx.Rngs(0)), jnp.ones((1, 2)))
