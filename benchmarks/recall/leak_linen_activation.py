import flax.linen as nn
import jax
import jax.numpy as jnp

ACTS = {}


class Block(nn.Module):
    @nn.compact
    def __call__(self, x):
        h = nn.Dense(2)(x)
        ACTS["h"] = h
        return h


m = Block()
params = m.init(jax.random.PRNGKey(0), jnp.ones((1, 2)))
jax.jit(m.apply)(params, jnp.ones((1, 2)))
print(float(ACTS["h"].sum()))
