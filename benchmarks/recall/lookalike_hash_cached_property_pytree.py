# Report: https://hope.liblaf.me/2025/2025-06-04-jax-jit-and-the-case-of-the-disappearing-cache-understanding-py-tree-nodes-and-functools-cached-property
# What the user did: used functools.cached_property on a flax PyTreeNode read inside a jitted function (the cache is per traced copy)
# Raises: silent
import functools

import flax.struct
import jax
import jax.numpy as jnp


class Foo(flax.struct.PyTreeNode):
    a: jax.Array

    @functools.cached_property
    def b(self) -> jax.Array:
        return jnp.sum(self.a)


@jax.jit
def use_b(foo: Foo) -> jax.Array:
    return foo.b * 2.0


foo = Foo(a=jnp.arange(4.0))
print(foo.b, foo.b)
print(use_b(foo))
print(use_b(foo))
