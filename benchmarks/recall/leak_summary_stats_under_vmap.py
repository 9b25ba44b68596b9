# Report: https://github.com/jax-ml/jax/pull/9246
# What the user did: a layer's compute_stats helper, run inside a vmapped and jitted function, added mean/std/max summaries to a module-level summary context that was read after the call
# Raises: UnexpectedTracerError
import jax
import jax.numpy as jnp

SUMMARIES = {}


def add_summary(name, value):
    SUMMARIES[name] = value


def compute_stats(inputs):
    mean = jnp.mean(inputs)
    std = jnp.std(inputs)
    add_summary("mean", mean)
    add_summary("std", std)
    add_summary("max", jnp.max(jnp.abs(inputs)))
    return mean, std


def layer(x):
    mean, std = compute_stats(x)
    return (x - mean) / (std + 1e-6)


out = jax.jit(jax.vmap(layer))(jnp.arange(8.0).reshape(2, 4))
print(out)
print({k: float(v.sum()) for k, v in SUMMARIES.items()})
