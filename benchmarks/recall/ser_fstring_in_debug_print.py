# Report: https://github.com/jax-ml/jax/issues/26296
# What the user did: passed an f-string to jax.debug.print inside a jitted function, so the tracer was formatted at trace time
# Raises: silent
import jax
import jax.numpy as jnp


@jax.jit
def step(x):
    y = jnp.sin(x) * 2.0
    jax.debug.print(f"intermediate y = {y}")
    return y.sum()


print(step(jnp.arange(3.0)))
