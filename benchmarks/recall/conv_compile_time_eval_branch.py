# Report: https://github.com/jax-ml/jax/issues/9823
# What the user did: ran the ensure_compile_time_eval doc example, testing `if z > 0` after leaving the context manager
# Raises: TracerBoolConversionError
import jax
import jax.numpy as jnp


@jax.jit
def f(x):
    with jax.ensure_compile_time_eval():
        y = jnp.sin(3.0)
        z = jnp.sin(y)
    if z > 0:
        return jnp.sin(x)
    else:
        return jnp.cos(x)


print(f(0.0))
