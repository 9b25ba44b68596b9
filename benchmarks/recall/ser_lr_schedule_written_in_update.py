# Report: https://github.com/goodfire-ai/spd/issues/651
# What the user did: logged the schedule's learning rate next to the loss (the JAX side logs sched(step + 1)); here the row is written in the jitted update
# Raises: silent
import jax
import jax.numpy as jnp
import optax

sched = optax.cosine_decay_schedule(1e-2, 100)
metrics_file = open("/tmp/spd651_metrics.tsv", "w")


@jax.jit
def update(params, step, x):
    loss, g = jax.value_and_grad(lambda p: jnp.mean((x @ p) ** 2))(params)
    lr = sched(step)
    metrics_file.write(f"{step}\t{loss}\t{sched(step + 1)}\n")
    return params - lr * g


params = jnp.ones(3)
for step in range(3):
    params = update(params, step, jnp.ones((2, 3)))
metrics_file.close()
with open("/tmp/spd651_metrics.tsv") as f:
    print(f.read())
