# Report: https://github.com/jax-ml/jax/pull/16430
# What the user did: filled an optional argument with `value or default`, which calls bool() on a traced array under jit
# Raises: TracerBoolConversionError
import jax
import jax.numpy as jnp


def rescale(x, weights=None):
    weights = weights or jnp.ones_like(x)
    return x * weights


@jax.jit
def step(x, weights):
    return rescale(x, weights).sum()


print(rescale(jnp.arange(3.0)))
print(step(jnp.arange(3.0), jnp.array(2.0)))
