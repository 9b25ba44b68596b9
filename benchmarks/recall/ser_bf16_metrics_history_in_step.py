# Report: https://github.com/wandb/wandb/issues/3464
# What the user did: wandb.log of a metrics dict holding jnp bfloat16 arrays (history JSON serialisation); here logged from the jitted step
# Raises: ConcretizationTypeError
import json

import jax
import jax.numpy as jnp


def json_dumps_safer_history(obj):
    def default(o):
        if hasattr(o, "dtype"):
            return o.astype(jnp.float32).item()
        raise TypeError(type(o).__name__)

    return json.dumps(obj, default=default)


history = []


def wandb_log(metrics, step):
    history.append({k: json_dumps_safer_history(v) for k, v in metrics.items()} | {"_step": step})


@jax.jit
def train_step(params, x):
    loss = jnp.mean((x @ params) ** 2).astype(jnp.bfloat16)
    wandb_log({"loss": loss}, step=2)
    return params * 0.9


print(train_step(jnp.ones(3), jnp.ones((2, 3))))
print(history)
