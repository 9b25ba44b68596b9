# Report: https://github.com/jax-ml/jax/issues/364
# What the user did: saved training summaries (the current params) from inside an @jit update
# Raises: silent
import jax
import jax.numpy as jnp

summary = open("/tmp/jax364_summaries.txt", "w")


def loss(params, batch):
    x, y = batch
    return jnp.mean((x @ params["w"] - y) ** 2)


@jax.jit
def update(i, params, batch):
    summary.write(f"step {i} params {params['w']}\n")
    grads = jax.grad(loss)(params, batch)
    return {"w": params["w"] - 0.1 * grads["w"]}


params = {"w": jnp.zeros(2)}
batch = (jnp.ones((4, 2)), jnp.ones(4))
for i in range(3):
    params = update(i, params, batch)
summary.close()
with open("/tmp/jax364_summaries.txt") as f:
    print(f.read())
