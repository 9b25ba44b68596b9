# Report: https://github.com/exoplanet-dev/celerite2/issues/46
# What the user did: a GaussianProcess object built outside jit had its compute() (which stores the factorization on the object) called inside a jitted likelihood, then was used again outside
# Raises: UnexpectedTracerError
import jax
import jax.numpy as jnp


class GaussianProcess:
    def __init__(self, scale):
        self.scale = scale

    def compute(self, t, yerr):
        cov = self.scale * jnp.exp(-0.5 * (t[:, None] - t[None, :]) ** 2)
        cov = cov + jnp.diag(yerr**2)
        self._chol = jnp.linalg.cholesky(cov)
        self._norm = -jnp.sum(jnp.log(jnp.diag(self._chol)))

    def log_likelihood(self, y):
        alpha = jax.scipy.linalg.solve_triangular(self._chol, y, lower=True)
        return self._norm - 0.5 * alpha @ alpha


gp = GaussianProcess(scale=1.0)
t = jnp.linspace(0.0, 5.0, 20)


@jax.jit
def log_prob(y, yerr):
    gp.compute(t, yerr)
    return gp.log_likelihood(y)


print(log_prob(jnp.sin(t), 0.1 * jnp.ones_like(t)))
print(gp.log_likelihood(jnp.cos(t)))
