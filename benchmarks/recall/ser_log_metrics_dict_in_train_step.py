# Report: https://github.com/mlflow/mlflow/issues/12870
# What the user did: logged a dict of array-valued metrics with log_metrics(metrics={...}, step=1); here the call is in the jitted train step
# Raises: ConcretizationTypeError
import time

import jax
import jax.numpy as jnp


class Tracker:
    def __init__(self):
        self.rows = []

    def log_metrics(self, metrics, step):
        ts = int(time.time() * 1000)
        for key, value in metrics.items():
            self.rows.append((key, float(value), ts, step))


tracker = Tracker()


@jax.jit
def train_step(w, x, y):
    loss, g = jax.value_and_grad(lambda w: jnp.mean((x @ w - y) ** 2))(w)
    tracker.log_metrics(metrics={"x": loss, "y": jnp.linalg.norm(g)}, step=1)
    return w - 0.1 * g


print(train_step(jnp.zeros(2), jnp.ones((3, 2)), jnp.ones(3)))
print(tracker.rows)
