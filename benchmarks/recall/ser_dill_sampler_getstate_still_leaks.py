# Report: https://github.com/pyro-ppl/numpyro/issues/1742
# What the user did: the maintainers' fix (pull 1746): __getstate__ drops the attributes that hold traced arrays before dill.dump; the pmapped method still stores a tracer on `self` (a leak that pickling no longer shows)
# Raises: silent
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
        self._support_sizes_flat = jnp.array([2, 3]) + jnp.zeros((), jnp.int32) * key[0]
        draws = jax.random.normal(key, (self.num_samples,))
        return draws.mean()

    def run(self, key, num_chains=2):
        keys = jax.random.split(key, num_chains)
        return jax.pmap(self._single_chain)(keys)

    def __getstate__(self):
        state = self.__dict__.copy()
        state["_support_sizes_flat"] = None
        return state


sampler = MixedSampler(100)
print(sampler.run(jax.random.PRNGKey(1)))
with open("/tmp/chains_test_fixed.pkl", "wb") as f:
    dill.dump(sampler, f)
with open("/tmp/chains_test_fixed.pkl", "rb") as f:
    print(dill.load(f).num_samples)
