# Report: https://github.com/dirmeier/sbijax/pull/57
# What the user did: fit() calls the jitted step in a Python loop and a checkpoint_callback pickles params every N iterations
# Raises: silent
import pickle
from pathlib import Path

import jax
import jax.numpy as jnp


def save_checkpoint(iteration, params, train_loss):
    Path("/tmp/sbijax_checkpoints").mkdir(exist_ok=True)
    with open(f"/tmp/sbijax_checkpoints/ckpt_{iteration}.pkl", "wb") as f:
        pickle.dump({"iteration": iteration, "params": params, "train_loss": train_loss}, f)


@jax.jit
def step(params, x):
    loss, grads = jax.value_and_grad(lambda p: jnp.mean((x @ p - 1.0) ** 2))(params)
    return params - 0.1 * grads, loss


def fit(params, x, n_iter=20, checkpoint_callback=None, checkpoint_every=5):
    for i in range(n_iter):
        params, loss = step(params, x)
        if checkpoint_callback is not None and i % checkpoint_every == 0:
            checkpoint_callback(i, params, loss)
    return params


print(fit(jnp.zeros(3), jnp.ones((4, 3)), checkpoint_callback=save_checkpoint))
