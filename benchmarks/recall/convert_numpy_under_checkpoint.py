import jax
import jax.numpy as jnp
import numpy as np


@jax.checkpoint
def layer(x):
    return np.tanh(x)


jax.jit(layer)(jnp.ones(2))
