# Report: https://github.com/jax-ml/jax/issues/4572
# What the user did: wanted an array as a static argument; the maintainer's wrapper hashes the concrete array by value outside jit
# Raises: silent
from functools import partial

import jax
import jax.numpy as jnp


def some_hash_function(x):
    return int(jnp.sum(x))


class HashableArrayWrapper:
    def __init__(self, val):
        self.val = val

    def __hash__(self):
        return some_hash_function(self.val)

    def __eq__(self, other):
        return isinstance(other, HashableArrayWrapper) and bool(jnp.all(jnp.equal(self.val, other.val)))


def static_array_jit(fun, static_array_argnums=()):
    @partial(jax.jit, static_argnums=static_array_argnums)
    def callee(*args):
        args = list(args)
        for i in static_array_argnums:
            args[i] = args[i].val
        return fun(*args)

    def caller(*args):
        args = list(args)
        for i in static_array_argnums:
            args[i] = HashableArrayWrapper(args[i])
        return callee(*args)

    return caller


@partial(static_array_jit, static_array_argnums=(0,))
def square(x):
    print("re-tracing!")
    return x**2


x = jnp.array([1.0, 2.0, 3.0])
print(square(x))
print(square(x))
x = jnp.array([1.0, 2.0, 3.0])
print(square(x))
