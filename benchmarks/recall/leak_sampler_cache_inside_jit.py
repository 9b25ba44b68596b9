# Report: https://github.com/pyro-ppl/numpyro/issues/2000
# What the user did: a sampler object cached a function built from its (traced) inputs so later runs are faster, and the run happened inside jit
# Raises: UnexpectedTracerError
import jax
import jax.numpy as jnp


class Sampler:
    def __init__(self, num_steps):
        self.num_steps = num_steps
        self._cache = {}

    def _get_step_fn(self, data):
        key = data.shape
        if key not in self._cache:
            scale = jnp.std(data)

            def step(z, noise):
                return z - 0.1 * (z - jnp.mean(data)) / scale + 0.01 * noise, z

            self._cache[key] = step
        return self._cache[key]

    def run(self, rng_key, data):
        step = self._get_step_fn(data)
        noise = jax.random.normal(rng_key, (self.num_steps,))
        _, zs = jax.lax.scan(step, 0.0, noise)
        return zs


sampler = Sampler(100)
data = jnp.arange(10.0)
inside = jax.jit(sampler.run)(jax.random.PRNGKey(0), data)
again = sampler.run(jax.random.PRNGKey(1), data)
print(again.mean())
