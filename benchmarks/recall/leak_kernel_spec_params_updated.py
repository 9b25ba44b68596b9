# Report: https://github.com/andresgur/mind_the_gaps/issues/78
# What the user did: the objective minimised for each lightcurve wrote the (traced) trial parameters into a shared kernel_spec object; the next lightcurve's fit started from that spec
# Raises: UnexpectedTracerError
import jax
import jax.numpy as jnp


class KernelSpec:
    def __init__(self, log_sigma, log_rho):
        self.params = {"log_sigma": jnp.float32(log_sigma), "log_rho": jnp.float32(log_rho)}

    def update_params(self, values):
        self.params = dict(zip(self.params, values))

    def vector(self):
        return jnp.stack(list(self.params.values()))


kernel_spec = KernelSpec(0.0, 1.0)


def neg_log_likelihood(values, t, y):
    kernel_spec.update_params(values)
    sigma = jnp.exp(kernel_spec.params["log_sigma"])
    rho = jnp.exp(kernel_spec.params["log_rho"])
    model = sigma * jnp.sin(t / rho)
    return jnp.sum((y - model) ** 2)


def fit(t, y, steps=20):
    values = kernel_spec.vector()
    grad_fn = jax.jit(jax.grad(neg_log_likelihood))
    for _ in range(steps):
        values = values - 0.01 * grad_fn(values, t, y)
    return values


def process_lightcurves(lightcurves):
    return [fit(t, y) for t, y in lightcurves]


t = jnp.linspace(0.0, 10.0, 50)
print(process_lightcurves([(t, jnp.sin(t)), (t, 2 * jnp.sin(t / 2))]))
