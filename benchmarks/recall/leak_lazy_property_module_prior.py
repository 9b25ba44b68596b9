# Report: https://github.com/pyro-ppl/numpyro/issues/1651
# What the user did: kept a truncated distribution in a module-level prior dict; the distribution lazily caches its normalizer on itself the first time it is used inside the traced sampler
# Raises: UnexpectedTracerError
import jax
import jax.numpy as jnp
from jax.scipy.stats import norm


class TruncatedNormal:
    def __init__(self, low=0.0):
        self.low = low
        self._log_normalizer = None

    @property
    def log_normalizer(self):
        if self._log_normalizer is None:
            self._log_normalizer = jnp.log1p(-norm.cdf(jnp.asarray(self.low)))
        return self._log_normalizer

    def log_prob(self, x):
        return norm.logpdf(x) - self.log_normalizer


prior = {"x": TruncatedNormal(low=0.0)}


def potential(x):
    return -prior["x"].log_prob(x)


chains = jax.vmap(jax.jit(jax.grad(potential)))(jnp.linspace(0.1, 2.0, 4))
print(chains)
print(prior["x"].log_prob(1.0))
