import jax
import jax.numpy as jnp
from joblib import Memory

memory = Memory("/tmp/joblib_cache", verbose=0)


@jax.jit
@memory.cache
def f(x):
    return x * 2


f(jnp.ones(2))
