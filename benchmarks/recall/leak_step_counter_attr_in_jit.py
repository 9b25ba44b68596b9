# Report: https://github.com/bayesflow-org/bayesflow/issues/223
# What the user did: a consistency model tracked its training step with `self.current_step += 1` inside the jit-compiled train step and used it for the discretization schedule
# Raises: silent (the counter only moves when the step is traced: prints step 1 and N=17 where ten eager steps give 10 and 150)
import jax
import jax.numpy as jnp


class ConsistencyModel:
    def __init__(self, total_steps):
        self.total_steps = total_steps
        self.current_step = 0
        self.train_step = jax.jit(self._train_step)

    def discretization(self):
        return jnp.ceil(2 + 148 * self.current_step / self.total_steps)

    def _train_step(self, params, x):
        self.current_step += 1
        n = self.discretization()
        loss = jnp.mean((params * x - x / n) ** 2)
        return params - 0.1 * jax.grad(lambda p: jnp.mean((p * x - x / n) ** 2))(params), loss


model = ConsistencyModel(total_steps=10)
params = jnp.float32(1.0)
for _ in range(10):
    params, loss = model.train_step(params, jnp.ones(3))
print(model.current_step, model.discretization())
