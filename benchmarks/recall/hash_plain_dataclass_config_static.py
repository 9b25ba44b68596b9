# Report: https://github.com/jax-ml/jax/issues/3701
# What the user did: passed a plain (non-frozen) @dataclass config as a static argument of a jitted function
# Raises: ValueError
import dataclasses
import functools

import jax
import jax.numpy as jnp


@dataclasses.dataclass
class EvalConfig:
    scale: int
    shift: float = 0.5


@functools.partial(jax.jit, static_argnums=1)
def score_batch(batch, config):
    return jnp.sum(batch * config.scale + config.shift)


def evaluate():
    config = EvalConfig(scale=3)
    batch = jnp.arange(4.0)
    return score_batch(batch, config)


print(evaluate())
