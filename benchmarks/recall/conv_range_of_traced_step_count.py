# Report: https://github.com/jax-ml/jax/issues/25186
# What the user did: in a jitted forward-Euler integrator, looped over range(i_end - i_start) with the indices passed as arguments
# Raises: TracerIntegerConversionError
import jax
import jax.numpy as jnp

jax.config.update("jax_enable_x64", True)


def velocity(z, h):
    return 0.5 * (1.0 - jnp.cos(z * jnp.pi / h))


@jax.jit
def forward_euler(z0, dt, h, i_start, i_end):
    z = z0
    for _ in range(i_end - i_start):
        z = z + dt * velocity(z, h)
    return z


print(forward_euler(jnp.array(0.1), 0.01, 2.0, 0, 50))
