# Report: https://github.com/PythonOT/POT/issues/625
# What the user did: called a NumPy-backed transport solver on a jnp cost matrix inside a loss taken with jax.grad
# Raises: TracerArrayConversionError
import jax
import jax.numpy as jnp
from scipy.optimize import linear_sum_assignment

key = jax.random.PRNGKey(0)
B = 10
key, subkey = jax.random.split(key)
x = jax.random.normal(subkey, (B, 1))
key, subkey = jax.random.split(key)
y = jax.random.normal(subkey, (B, 1))


def coupling(costs):
    rows, cols = linear_sum_assignment(costs)
    return jnp.zeros((B, B)).at[rows, cols].set(1.0 / B)


def loss_fn(x, y):
    costs = jnp.linalg.norm(x[:, None] - y[None, :], axis=-1) ** 2
    pi = coupling(costs)
    return jnp.sum(pi * costs)


g = jax.grad(loss_fn)(x, y)
print(g)
