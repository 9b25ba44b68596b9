# Report: https://github.com/google-deepmind/distrax/issues/291
# What the user did: sliced a batched distribution by a jnp index under jit; the slicing helper indexes np.indices(batch_shape) with it
# Raises: TracerArrayConversionError
import jax
import jax.numpy as jnp
import numpy as np


def to_batch_shape_index(batch_shape, index):
    new_index = [x[index] for x in np.indices(batch_shape)]
    return tuple(new_index)


class Categorical:
    def __init__(self, logits):
        self.logits = logits

    @property
    def batch_shape(self):
        return self.logits.shape[:-1]

    def __getitem__(self, index):
        index = to_batch_shape_index(self.batch_shape, index)
        return Categorical(self.logits[index])

    def entropy(self):
        log_p = jax.nn.log_softmax(self.logits)
        return -jnp.sum(jnp.exp(log_p) * log_p, axis=-1)


def foo(logits):
    d = Categorical(logits=logits)
    mask = jnp.arange(logits.shape[0])
    return d[mask].entropy()


logits = jnp.zeros((3, 3, 3))
print(foo(logits))
print(jax.jit(foo)(logits))
