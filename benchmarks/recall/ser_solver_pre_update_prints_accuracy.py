# Report: https://github.com/google/jaxopt/issues/101
# What the user did: jitted solver.update while the solver's pre_update hook printed the accuracy every 10 iterations
# Raises: TracerBoolConversionError
from typing import NamedTuple

import jax
import jax.numpy as jnp


class OptState(NamedTuple):
    iter_num: jnp.ndarray
    value: jnp.ndarray


def accuracy(params, x, y):
    return jnp.mean((x @ params > 0) == y)


def print_accuracy(params, state, x, y):
    if state.iter_num % 10 == 0:
        print(f"[Step {state.iter_num}] train accuracy: {accuracy(params, x, y):.3f}.")
    return params, state


class OptaxSolver:
    def __init__(self, fun, learning_rate, pre_update=None):
        self.fun = fun
        self.learning_rate = learning_rate
        self.pre_update = pre_update

    def init_state(self, params):
        return OptState(jnp.asarray(0), jnp.asarray(jnp.inf))

    def update(self, params, state, x, y):
        if self.pre_update is not None:
            params, state = self.pre_update(params, state, x, y)
        value, grad = jax.value_and_grad(self.fun)(params, x, y)
        return params - self.learning_rate * grad, OptState(state.iter_num + 1, value)


def loss(params, x, y):
    return jnp.mean((jax.nn.sigmoid(x @ params) - y) ** 2)


solver = OptaxSolver(loss, 0.1, pre_update=print_accuracy)
x, y = jnp.ones((8, 3)), jnp.ones(8)
params = jnp.zeros(3)
state = solver.init_state(params)
for _ in range(3):
    params, state = jax.jit(solver.update)(params=params, state=state, x=x, y=y)
print(state.value)
