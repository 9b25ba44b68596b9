from typing import NamedTuple

import jax
import jax.numpy as jnp

HISTORY = []


class Metrics(NamedTuple):
    loss: float
    split: str


@jax.jit
def step(x):
    HISTORY.append(Metrics((x**2).mean(), "train"))
    return x * 2


step(jnp.arange(3.0))
print(float(HISTORY[-1].loss) + 1, HISTORY[-1].split)
