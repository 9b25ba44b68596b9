# Report: https://github.com/XanaduAI/GradDFT/issues/50
# What the user did: computed each term of a mean-square loss over ragged molecules in parallel with a thread pool, then differentiated the loss with jax.grad
# Raises: UnexpectedTracerError
from concurrent.futures import ThreadPoolExecutor

import jax
import jax.numpy as jnp

molecules = [jnp.linspace(0.0, 1.0, n) for n in (5, 8, 13)]
targets = [0.5, 1.0, 1.5]


def predict_energy(params, grid):
    return jnp.sum(params[0] * grid + params[1] * grid**2) / grid.shape[0]


def loss(params):
    def term(args):
        grid, target = args
        return (predict_energy(params, grid) - target) ** 2

    with ThreadPoolExecutor(max_workers=3) as pool:
        terms = list(pool.map(term, zip(molecules, targets)))
    return sum(terms) / len(terms)


print(jax.grad(loss)(jnp.array([1.0, 0.5])))
