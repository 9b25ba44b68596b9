# Report: https://github.com/jax-ml/jax/issues/13540
# What the user did: flax serialization.msgpack_serialize on jax arrays, reached through a checkpoint save (here from the jitted train step)
# Raises: TracerArrayConversionError
import jax
import jax.numpy as jnp
from flax import serialization


def save_checkpoint(path, state):
    with open(path, "wb") as f:
        f.write(serialization.msgpack_serialize(state))


@jax.jit
def train_step(state, x):
    grads = jax.grad(lambda w: jnp.sum((x @ w) ** 2))(state["w"])
    state = {"w": state["w"] - 0.1 * grads, "step": state["step"] + 1}
    save_checkpoint("/tmp/jax13540_ckpt.msgpack", state)
    return state


state = {"w": jnp.zeros(5), "step": jnp.array(0)}
state = train_step(state, jnp.ones((2, 5)))
print(state["step"])
