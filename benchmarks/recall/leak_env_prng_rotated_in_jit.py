# Report: https://github.com/google/torchax/pull/95
# What the user did: a random op inside a jitted wrapper rotated the PRNG key held on a long-lived environment object
# Raises: UnexpectedTracerError
import jax
import jax.numpy as jnp


class RuntimeProperty:
    def __init__(self, seed):
        self.prng = jax.random.key(seed)


class Environment:
    def __init__(self):
        self.prop = RuntimeProperty(0)

    def get_and_rotate_prng_key(self):
        self.prop.prng, key = jax.random.split(self.prop.prng)
        return key


env = Environment()


def dropout(x, rate=0.5):
    keep = jax.random.bernoulli(env.get_and_rotate_prng_key(), 1 - rate, x.shape)
    return jnp.where(keep, x / (1 - rate), 0.0)


jitted = jax.jit(dropout)
print(jitted(jnp.ones(4)))
print(dropout(jnp.ones(4)))
