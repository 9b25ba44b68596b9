# Report: https://github.com/marin-community/marin/pull/5871
# What the user did: a background tracker runs log calls on a daemon thread; metrics from the jitted step are materialized with jax.device_get on the trainer thread before they cross the queue
# Raises: none (a look-alike that runs correctly: only host values reach the worker thread)
import queue
import threading

import jax
import jax.numpy as jnp


class BackgroundTracker:
    def __init__(self):
        self.records = []
        self._queue = queue.Queue()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self):
        while True:
            item = self._queue.get()
            if item is None:
                break
            self.records.append({k: float(v) for k, v in item.items()})

    def log(self, metrics):
        self._queue.put(jax.device_get(metrics))

    def finish(self):
        self._queue.put(None)
        self._thread.join()


@jax.jit
def train_step(params, x):
    loss = jnp.mean((params * x - 1.0) ** 2)
    grad = jax.grad(lambda p: jnp.mean((p * x - 1.0) ** 2))(params)
    return params - 0.1 * grad, {"loss": loss, "grad_norm": jnp.abs(grad)}


tracker = BackgroundTracker()
params = jnp.float32(0.0)
for _ in range(3):
    params, metrics = train_step(params, jnp.ones(4))
    tracker.log(metrics)
tracker.finish()
print(tracker.records)
