# Report: https://github.com/talmolab/track-mjx/pull/239
# What the user did: logged eval/rollout_episode_reward (sum up to the first done) to W&B from the eval rollout; here from inside the jitted rollout
# Raises: ConcretizationTypeError
import jax
import jax.numpy as jnp

wandb_rows = []


def wandb_log(row, commit=False):
    wandb_rows.append(row)


@jax.jit
def eval_rollout(key):
    rewards = jax.random.uniform(key, (20,))
    done = jnp.arange(20) >= 12
    active = jnp.cumprod(1 - done.astype(jnp.float32))
    episode_reward = jnp.sum(rewards * active)
    wandb_log({"eval/rollout_episode_reward": float(episode_reward)}, commit=False)
    return episode_reward


print(eval_rollout(jax.random.PRNGKey(0)))
