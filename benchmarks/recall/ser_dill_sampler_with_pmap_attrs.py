# Report: https://github.com/pyro-ppl/numpyro/issues/1742
# What the user did: dill.dump of a sampler object after running chains in parallel (pmap), whose run stored traced arrays on its attributes
# Raises: ConcretizationTypeError
import os

os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=2"

import dill
import jax
import jax.numpy as jnp


class MixedSampler:
    def __init__(self, num_samples):
        self.num_samples = num_samples
        self._support_sizes_flat = None

    def _single_chain(self, key):
        # the support sizes are worked out inside the mapped chain and kept for later runs
        self._support_sizes_flat = jnp.array([2, 3]) + jnp.zeros((), jnp.int32) * key[0]
        draws = jax.random.normal(key, (self.num_samples,))
        return draws.mean()

    def run(self, key, num_chains=2):
        keys = jax.random.split(key, num_chains)
        return jax.pmap(self._single_chain)(keys)


sampler = MixedSampler(100)
print(sampler.run(jax.random.PRNGKey(1)))
with open("/tmp/chains_test.pkl", "wb") as f:
    dill.dump(sampler, f)
