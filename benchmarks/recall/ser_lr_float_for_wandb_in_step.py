# Report: https://github.com/kingoflolz/mesh-transformer-jax/pull/80
# What the user did: logged float(scheduler(step)) and the optimizer's count().item() to W&B; here the log dict is built in the jitted train step
# Raises: ConcretizationTypeError
import jax
import jax.numpy as jnp
import optax

scheduler = optax.warmup_cosine_decay_schedule(0.0, 1e-3, 10, 100)
opt = optax.adam(scheduler)
logged = []


def wandb_log(row, step):
    logged.append((step, row))


@jax.jit
def train_step(params, opt_state, x):
    loss, grads = jax.value_and_grad(lambda p: jnp.mean((x @ p) ** 2))(params)
    updates, opt_state = opt.update(grads, opt_state)
    step = opt_state[0].count
    wandb_log({"train/loss": float(loss), "train/learning_rate": float(scheduler(step))}, step.item())
    return optax.apply_updates(params, updates), opt_state


params = jnp.ones(4)
opt_state = opt.init(params)
params, opt_state = train_step(params, opt_state, jnp.ones((3, 4)))
print(logged)
