# Report: https://github.com/jax-ml/jax/issues/648
# What the user did: passed the number of samples of a jitted Metropolis sampler as an argument and used it in random.randint's shape
# Raises: TypeError
import jax
import jax.numpy as jnp
from jax import random


@jax.jit
def sample(key, n_samps, dim):
    proposals = random.normal(key, (n_samps, dim))
    picks = random.randint(key, (n_samps,), 0, dim)
    return jnp.take_along_axis(proposals, picks[:, None], axis=1)


key = random.PRNGKey(1)
print(sample(key, 10, 3))
