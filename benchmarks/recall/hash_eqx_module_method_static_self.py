# Report: https://github.com/patrick-kidger/equinox/issues/11
# What the user did: decorated a method of an eqx.Module holding arrays with partial(jax.jit, static_argnums=0), making self static
# Raises: ValueError
from functools import partial

import equinox as eqx
import jax
import jax.numpy as jnp


class DenseSynapse(eqx.Module):
    weight: jax.Array

    @partial(jax.jit, static_argnums=0)
    def energy(self, state):
        return -0.5 * state @ self.weight @ state


synapse = DenseSynapse(jax.random.normal(jax.random.PRNGKey(0), (8, 8)))
print(synapse.energy(jnp.ones(8)))
