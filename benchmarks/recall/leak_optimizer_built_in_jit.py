# Report: https://github.com/google-deepmind/optax/issues/1186
# What the user did: built a Muon-style optimizer (its constructor turns the Newton-Schulz coefficients into a jnp array) inside a jitted create_train_state, then used state.tx in a later jitted step
# Raises: UnexpectedTracerError
from typing import Any, Callable

import jax
import jax.numpy as jnp
from flax import struct


class GradientTransformation(struct.PyTreeNode):
    init: Callable = struct.field(pytree_node=False)
    update: Callable = struct.field(pytree_node=False)


def scale_by_muon(ns_coeffs=(3.4445, -4.7750, 2.0315)):
    ns_coeffs_ = jnp.asarray(ns_coeffs)

    def init_fn(params):
        return jnp.zeros_like(params)

    def update_fn(grads, state, params=None):
        a, b, c = ns_coeffs_
        x = grads / (jnp.linalg.norm(grads) + 1e-7)
        gram = x @ x.T
        x = a * x + (b * gram + c * gram @ gram) @ x
        return -0.02 * x, state

    return GradientTransformation(init_fn, update_fn)


class TrainState(struct.PyTreeNode):
    params: Any
    opt_state: Any
    tx: GradientTransformation = struct.field(pytree_node=False)


@jax.jit
def create_train_state():
    params = jnp.zeros((5, 18))
    tx = scale_by_muon()
    return TrainState(params=params, opt_state=tx.init(params), tx=tx)


@jax.jit
def step(state, x, y):
    def loss_fn(params):
        return jnp.mean((x @ params.T - y) ** 2)

    grads = jax.grad(loss_fn)(state.params)
    updates, opt_state = state.tx.update(grads, state.opt_state, state.params)
    return state.replace(params=state.params + updates, opt_state=opt_state)


state = create_train_state()
state = step(state, jnp.ones((4, 18)), jnp.ones((4, 5)))
print(state.params.sum())
