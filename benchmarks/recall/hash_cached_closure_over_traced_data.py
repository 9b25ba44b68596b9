# Report: https://github.com/pyro-ppl/numpyro/issues/2000
# What the user did: ran a sampler that caches its compiled step per data shape inside jit, then reused the sampler outside jit
# Raises: UnexpectedTracerError
from functools import partial

import jax
import jax.numpy as jnp


def potential(z, data):
    return 0.5 * jnp.sum((data - z) ** 2)


class Sampler:
    def __init__(self, step_size):
        self.step_size = step_size
        self._cache = {}

    def _get_step(self, data):
        key = data.shape
        if key not in self._cache:
            grad_fn = jax.grad(partial(potential, data=data))
            self._cache[key] = lambda z: z - self.step_size * grad_fn(z)
        return self._cache[key]

    def run(self, z0, data, num_steps=10):
        step = self._get_step(data)
        return jax.lax.fori_loop(0, num_steps, lambda i, z: step(z), z0)


sampler = Sampler(0.1)
data = jnp.arange(3.0)
print(jax.jit(lambda d: sampler.run(0.0, d))(data))
print(sampler.run(0.0, data))
