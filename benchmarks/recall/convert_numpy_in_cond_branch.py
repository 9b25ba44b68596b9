import jax
import jax.numpy as jnp
import numpy as np


def pos(x):
    return np.log(x)


def neg(x):
    return -x


@jax.jit
def f(x):
    return jax.lax.cond(x > 0, pos, neg, x)


f(jnp.float32(1.0))
