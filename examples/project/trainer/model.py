"""A two-layer MLP classifier written with `jax.numpy`."""
import functools

import jax
import jax.numpy as jnp


def init_params(key, sizes=(4, 16, 3)):
    """Random weights and zero biases for an MLP with layer widths `sizes`."""
    params = {}
    keys = jax.random.split(key, len(sizes) - 1)
    for i, (k, n_in, n_out) in enumerate(zip(keys, sizes[:-1], sizes[1:])):
        params[f"w{i}"] = jax.random.normal(k, (n_in, n_out)) / jnp.sqrt(n_in)
        params[f"b{i}"] = jnp.zeros(n_out)
    return params


def forward(params, x):
    """Logits of the MLP for a batch `x` of shape (batch, features)."""
    h = jnp.tanh(x @ params["w0"] + params["b0"])
    return h @ params["w1"] + params["b1"]


def loss_fn(params, x, y):
    """Mean softmax cross-entropy against integer labels `y`."""
    logp = jax.nn.log_softmax(forward(params, x))
    return -jnp.mean(jnp.take_along_axis(logp, y[:, None], axis=1))


@functools.lru_cache(maxsize=128)
@jax.jit
def predict(params, x):
    """Predicted class of every row of `x`."""
    return jnp.argmax(forward(params, x), axis=-1)


@functools.lru_cache(maxsize=None)
def make_optimizer(lr: float):
    """Build (once per learning rate) a jitted plain-SGD update."""

    @jax.jit
    def update(params, grads):
        return jax.tree_util.tree_map(lambda p, g: p - lr * g, params, grads)

    return update
