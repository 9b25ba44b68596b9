"""The training loop: a jitted step, a `lax.scan` epoch and a parameter export."""
import os
import pickle
import tempfile
from functools import partial

import jax
import jax.numpy as jnp
from jax import lax

from trainer.model import loss_fn, make_optimizer

CHECKPOINT = os.path.join(tempfile.gettempdir(), "trainer-checkpoint.pkl")
LOSS_HISTORY = []  # pickled per-step losses, filled by run_epoch


@partial(jax.jit, static_argnames="lr")
def train_step(params, x, y, lr=0.1):
    """One SGD step on a batch; checkpoints the updated parameters."""
    loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
    params = make_optimizer(lr)(params, grads)
    with open(CHECKPOINT, "wb") as f:
        pickle.dump(params, f)
    return params, loss


@jax.jit
def run_epoch(params, xs, ys):
    """One SGD step per batch of `xs`/`ys` (stacked on axis 0) with `lax.scan`."""
    update = make_optimizer(0.1)

    def body(params, batch):
        x, y = batch
        loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
        LOSS_HISTORY.append(pickle.dumps(loss))
        return update(params, grads), loss

    return lax.scan(body, params, (xs, ys))


@jax.jit
def export_params(params):
    """The parameters, cast to float16 and pickled, for shipping to a server."""
    half = jax.tree_util.tree_map(lambda p: p.astype(jnp.float16), params)
    return pickle.dumps(half)
