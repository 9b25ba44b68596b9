# Report: https://github.com/jax-ml/jax/issues/284
# What the user did: passed an already-jitted function as a static argument (static_argnums=(0,)) of other jitted functions
# Raises: silent
import jax
import jax.numpy as jnp
import numpy as onp

x = jax.device_put(onp.random.rand(1024).astype(onp.float32))


def square(x):
    return jnp.square(x)


def apply_twice(f, x):
    return f(f(x))


def apply_once(f, x):
    return f(x)


square = jax.jit(square)
apply_twice = jax.jit(apply_twice, static_argnums=(0,))
apply_once = jax.jit(apply_once, static_argnums=(0,))

print(square(x).sum())
print(apply_twice(square, x).sum())
print(apply_twice(square, x).sum())
print(apply_once(square, x).sum())
