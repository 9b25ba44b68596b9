# Report: https://github.com/google/flax/issues/4247
# What the user did: pickled a trained NNX model (cloudpickle, as the maintainer suggested); here the dump sits in the nnx.jit train step
# Raises: ConcretizationTypeError
import cloudpickle
import jax.numpy as jnp
import optax
from flax import nnx


class Model(nnx.Module):
    def __init__(self, rngs):
        self.linear = nnx.Linear(3, 1, rngs=rngs)
        self.stats = {"epochs": 0}

    def __call__(self, x):
        return self.linear(x)


@nnx.jit
def train_step(model, optimizer, x, y):
    def loss_fn(model):
        return jnp.mean((model(x) - y) ** 2)

    loss, grads = nnx.value_and_grad(loss_fn)(model)
    optimizer.update(model, grads)
    with open("/tmp/my-model.pk", "wb") as file:
        cloudpickle.dump(model, file)
    return loss


model = Model(nnx.Rngs(0))
optimizer = nnx.Optimizer(model, optax.sgd(0.1), wrt=nnx.Param)
print(train_step(model, optimizer, jnp.ones((4, 3)), jnp.zeros((4, 1))))
