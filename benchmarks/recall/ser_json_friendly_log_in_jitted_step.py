# Report: https://github.com/wandb/wandb/pull/428
# What the user did: logged JAX tensors with wandb.log, whose json_friendly converts them with numpy; the PR notes logging a tensor inside a jax function
# Raises: TracerArrayConversionError
import json

import jax
import jax.numpy as jnp
import numpy as np


def json_friendly(obj):
    typename = type(obj).__name__
    if "Array" in typename or "Tracer" in typename:
        obj = np.asarray(obj)
    if isinstance(obj, np.ndarray):
        obj = obj.tolist()
    return obj


class Run:
    def __init__(self, path):
        self.path = path

    def log(self, row):
        with open(self.path, "a") as f:
            f.write(json.dumps({k: json_friendly(v) for k, v in row.items()}) + "\n")


run = Run("/tmp/wandb428_history.jsonl")


@jax.jit
def update(params, x):
    loss, grads = jax.value_and_grad(lambda p: jnp.sum((x @ p) ** 2))(params)
    run.log({"loss": loss, "grad": grads})
    return params - 0.01 * grads


print(update(jnp.ones(3), jnp.ones((2, 3))))
