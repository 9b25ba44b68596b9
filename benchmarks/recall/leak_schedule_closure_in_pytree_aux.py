# Report: https://jugheadjones10.github.io/kim-young-jin/ml/leaked_batch_tracer.html
# What the user did: moved TrainState creation into a training function vmapped over learning rates; the learning-rate schedule closure over the traced lr is kept as static aux data of the TrainState pytree
# Raises: Exception (leak checker, as in the post: "Leaked trace BatchTrace")
import jax
import jax.numpy as jnp
from jax import tree_util


class TrainState:
    def __init__(self, fn):
        self.fn = fn


tree_util.register_pytree_node(
    TrainState,
    lambda container: ((), container.fn),
    lambda aux_data, children: TrainState(aux_data),
)


def train_fn(lr):
    def learning_schedule(count):
        return lr * 10.0 / (1.0 + count)

    return TrainState(fn=learning_schedule)


input_values = jnp.array([1.0, 5.0, 10.0])
vmapped_creator = jax.vmap(train_fn)
with jax.checking_leaks():
    states = vmapped_creator(input_values)
print(states.fn(0))
