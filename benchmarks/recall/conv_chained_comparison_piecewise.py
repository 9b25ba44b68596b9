# Report: https://github.com/jax-ml/jax/issues/7969
# What the user did: wrote a piecewise-linear function with a chained condition 0 < x < 1 and jitted it
# Raises: TracerBoolConversionError
import jax
import jax.numpy as jnp


def ramp(x):
    return jnp.piecewise(x, [x < 0, 0 < x < 1], [lambda v: -v, lambda v: v])


ramp_jit = jax.jit(ramp)

print(ramp(0.5))
print(ramp_jit(0.5))
