# Report: https://github.com/jax-ml/jax/issues/3843
# What the user did: called jax.grad of a scan-based function from several ThreadPoolExecutor workers, each thread tracing its own call (fixed in jax, runs fine)
# Raises: none (a look-alike that runs correctly: no traced value crosses a thread)
import concurrent.futures

import jax
from jax import numpy as jnp


def unroll(param, sequence):
    def scan_f(prev_state, inputs):
        return prev_state, jax.nn.sigmoid(param * inputs)

    return jnp.sum(jax.lax.scan(scan_f, None, sequence)[1])


def run():
    return jax.grad(unroll)(jnp.array(1.0), jnp.array([1.0]))


n_workers = 4
with concurrent.futures.ThreadPoolExecutor(max_workers=n_workers) as e:
    futures = [e.submit(run) for _ in range(n_workers)]
    results = [f.result() for f in futures]
print(results)
