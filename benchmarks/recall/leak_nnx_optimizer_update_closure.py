# Report: https://github.com/google/flax/issues/4695
# What the user did: a class built a plain jax.jit update closure that calls nnx.Optimizer.update on the model and optimizer it holds, then saved nnx.state(model)
# Raises: ValueError (Flax NNX: "Cannot extract graph node from different trace level")
import jax
import jax.numpy as jnp
import optax
from flax import nnx


class Algorithm:
    def __init__(self, model, lr):
        self.model = model
        self.tx = optax.adamw(lr)
        self.optimizer = nnx.Optimizer(model, self.tx, wrt=nnx.Param)

        @jax.jit
        def update(x, y):
            def loss_fn(model):
                return jnp.mean((model(x) - y) ** 2)

            grad = nnx.grad(loss_fn)(self.model)
            self.optimizer.update(self.model, grad)

        self.update = update


algo = Algorithm(nnx.Linear(3, 1, rngs=nnx.Rngs(0)), 1e-3)
algo.update(jnp.ones((4, 3)), jnp.ones((4, 1)))
print(nnx.state(algo.model))
