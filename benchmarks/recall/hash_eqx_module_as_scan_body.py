# Report: https://openillumi.com/equinox-jax-scan-unhashable-fix-curry
# What the user did: handed an eqx.Module state-space model (array fields) straight to jax.lax.scan as the step function
# Raises: TypeError
import equinox as eqx
import jax
import jax.numpy as jnp


class StateSpace(eqx.Module):
    A: jax.Array
    B: jax.Array
    C: jax.Array

    def __call__(self, states, inputs):
        x = states.reshape(-1, 1)
        u = inputs.reshape(-1, 1)
        x_next = self.A @ x + self.B @ u
        y = self.C @ x
        return x_next.reshape(-1), y.reshape(-1)


model = StateSpace(A=0.9 * jnp.eye(2), B=jnp.ones((2, 1)), C=jnp.ones((1, 2)))
x0 = jnp.zeros(2)
inputs = jnp.ones((20, 1))
final_state, outputs = jax.lax.scan(model, x0, inputs)
print(final_state, outputs.shape)
