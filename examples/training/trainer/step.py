import jax
import jax.numpy as jnp

from trainer import checkpoints, metrics, replay


@jax.jit
def train_step(params, batch):
    loss = jnp.mean((batch @ params - 1.0) ** 2)
    grads = jax.grad(lambda p: jnp.mean((batch @ p - 1.0) ** 2))(params)
    params = params - 0.1 * grads
    metrics.log_loss(loss)
    replay.push(batch)
    checkpoints.save(params, "latest")
    return params
