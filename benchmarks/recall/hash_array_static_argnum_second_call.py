# Report: https://github.com/jax-ml/jax/issues/883
# What the user did: marked an array parameter of a jitted function static (static_argnums=(1,)) and called it twice with a jnp array
# Raises: ValueError
from functools import partial

import jax
import jax.numpy as jnp


@partial(jax.jit, static_argnums=(1,))
def propagate(state, offsets):
    return state


def main():
    state = jnp.ones((10, 10))
    offsets = jnp.array([1, 2, 3])
    first = propagate(state, offsets)
    print(first.shape)
    second = propagate(state, offsets)
    print(second.shape)


if __name__ == "__main__":
    main()
