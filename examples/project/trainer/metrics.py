"""Evaluation metrics, jitted; only static shapes are serialized at trace time."""
import json

import jax
import jax.numpy as jnp

from trainer.model import forward, loss_fn

TRACED_SHAPES = []  # one JSON record per compilation of `evaluate`


@jax.jit
def evaluate(params, x, y):
    """Loss and accuracy on a full data set, printed from the device."""
    n, features = x.shape  # static under jit
    TRACED_SHAPES.append(json.dumps({"examples": n, "features": features}))
    accuracy = jnp.mean(jnp.argmax(forward(params, x), axis=-1) == y)
    loss = loss_fn(params, x, y)
    jax.debug.print("eval on {n} examples: loss={l:.3f} accuracy={a:.3f}", n=n, l=loss, a=accuracy)
    return loss, accuracy
