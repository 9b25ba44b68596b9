# Report: https://github.com/google/uv-metrics/pull/30
# What the user did: an MLflow reporter turned each reported metric into NumPy (numpy() conversion) before logging; here reported from a jitted step
# Raises: TracerArrayConversionError
import jax
import jax.numpy as jnp
import numpy as np


class MLFlowReporter:
    def __init__(self):
        self.logged = {}

    def report_all(self, step, metrics):
        for k, v in metrics.items():
            self.logged.setdefault(k, []).append((step, np.asarray(v).item()))


reporter = MLFlowReporter()


@jax.jit
def step(params, batch, i):
    loss = jnp.mean((batch @ params) ** 2)
    reporter.report_all(i, {"loss": loss, "param_norm": jnp.linalg.norm(params)})
    return params * 0.9


print(step(jnp.ones(3), jnp.ones((2, 3)), 0))
