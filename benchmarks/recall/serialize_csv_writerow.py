import csv

import jax
import jax.numpy as jnp


@jax.jit
def step(x):
    with open("/tmp/x.csv", "w") as f:
        csv.writer(f).writerow([x.sum()])
    return x


step(jnp.ones(2))
