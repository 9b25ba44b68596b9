# Report: https://github.com/keras-team/keras/pull/22107
# What the user did: the trainer's train_step (jitted) turned its metric logs into Python floats for the callbacks (pythonify_logs)
# Raises: ConcretizationTypeError
import jax
import jax.numpy as jnp


def pythonify_logs(logs):
    return {name: float(value) for name, value in logs.items()}


class Trainer:
    def __init__(self):
        self.w = jnp.ones(3)

    def loss_fn(self, w, x, y):
        return jnp.mean((x @ w - y) ** 2)

    def get_metrics_result(self, loss, grads):
        logs = {"loss": loss, "grad_norm": jnp.linalg.norm(grads)}
        return pythonify_logs(logs)

    def train_step(self, w, x, y):
        loss, grads = jax.value_and_grad(self.loss_fn)(w, x, y)
        w = w - 0.1 * grads
        return w, self.get_metrics_result(loss, grads)

    def fit(self, x, y, steps=3):
        step = jax.jit(self.train_step)
        for _ in range(steps):
            self.w, logs = step(self.w, x, y)
            print(logs)


Trainer().fit(jnp.ones((4, 3)), jnp.zeros(4))
