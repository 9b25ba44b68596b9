# Report: https://github.com/jax-ml/jax/issues/24740
# What the user did: wrote a Mandelbrot escape-time loop with `if jnp.abs(z) > 2.0: return i` and vmapped it over points
# Raises: TracerBoolConversionError
import jax
import jax.numpy as jnp


def escape_time(c, max_iter):
    z = jnp.array([0.0 + 0.0j])
    for i in range(max_iter):
        z = z * z + c
        if jnp.abs(z) > 2.0:
            return jnp.array([i])
    return jnp.array([max_iter])


point = jnp.complex64(-0.75 + 0.1j)
print(escape_time(point, 100))
points = jnp.array([point, point, point, point])
escape_time_batched = jax.vmap(escape_time, in_axes=(0, None))
print(escape_time_batched(points, 10))
