import jax
import jax.numpy as jnp


@jax.jit
def train_step(params, batch, step):
    key = jax.random.PRNGKey(hash(step))
    mask = jax.random.bernoulli(key, 0.9, batch.shape)
    grads = jax.grad(lambda p: jnp.mean((batch * mask * p) ** 2))(params)
    return params - 0.1 * grads


params = jnp.ones(4)
for step in range(3):
    params = train_step(params, jnp.arange(4.0), step)
print(params)
