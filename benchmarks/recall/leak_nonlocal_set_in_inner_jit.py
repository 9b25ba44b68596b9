# Report: https://github.com/jax-ml/jax/issues/27315
# What the user did: a nested jitted function assigned a traced value to a `nonlocal` that a sibling jitted function reads
# Raises: Exception (leak checker: "Leaked trace")
import jax
import jax.numpy as jnp

jax.config.update("jax_check_tracer_leaks", True)


@jax.jit
def outer():
    shared = None

    @jax.jit
    def reader():
        return shared

    @jax.jit
    def writer():
        nonlocal shared
        shared = jnp.uint32(0)
        reader()
        shared = None

    writer()


outer()
