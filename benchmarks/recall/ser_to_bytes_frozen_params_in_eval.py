# Report: https://github.com/google/flax/issues/2005
# What the user did: saved a linen module's FrozenDict params with flax.serialization (msgpack); here inside the jitted eval step
# Raises: TracerArrayConversionError
import flax.linen as nn
import jax
import jax.numpy as jnp
from flax import serialization
from flax.core import freeze


@jax.jit
def eval_and_snapshot(params, x):
    y = nn.Dense(1).apply(params, x)
    blob = serialization.to_bytes(freeze(params))
    with open("/tmp/flax2005_params.msgpack", "wb") as f:
        f.write(blob)
    return y


params = freeze(nn.Dense(1).init(jax.random.PRNGKey(0), jnp.zeros((1,))))
print(eval_and_snapshot(params, jnp.ones((2, 1))))
