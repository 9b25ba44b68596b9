# Report: https://github.com/jax-ml/jax/issues/2009
# What the user did: a PRNGKeyGenerator whose next() splits and stores its own key, used to draw noise inside a jitted function
# Raises: UnexpectedTracerError
import jax
import jax.numpy as jnp


class PRNGKeyGenerator:
    def __init__(self, seed):
        self._key = jax.random.PRNGKey(seed)

    def next(self):
        self._key, new_key = jax.random.split(self._key)
        return new_key


keygen = PRNGKeyGenerator(0)


@jax.jit
def noisy(x):
    return x + jax.random.uniform(keygen.next(), x.shape)


a = noisy(jnp.zeros((10, 10)))
b = jax.random.uniform(keygen.next(), (10, 10))
print(a.sum(), b.sum())
