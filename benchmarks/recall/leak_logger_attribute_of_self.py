import functools
import logging

import jax
import jax.numpy as jnp


class Model:
    def __init__(self):
        self.log = logging.getLogger("model")

    @functools.partial(jax.jit, static_argnums=0)
    def __call__(self, x):
        y = x * 2
        self.log.info("y=%s", y)
        return y


Model()(jnp.ones(2))
