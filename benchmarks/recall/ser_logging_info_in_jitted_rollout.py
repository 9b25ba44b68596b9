# Report: https://github.com/LeCAR-Lab/CoVO-MPC/issues/2
# What the user did: logged the mean of a loss with logging.info (to a FileHandler log file) from a helper called inside a jitted rollout
# Raises: silent
import logging

import jax
import jax.numpy as jnp

logger = logging.getLogger("mpc")
logger.setLevel(logging.DEBUG)
handler = logging.FileHandler("/tmp/covo_mpc_debug.log")
handler.setFormatter(logging.Formatter("%(asctime)s - %(levelname)s - %(message)s"))
logger.addHandler(handler)


def _log_loss(total_loss):
    total_loss_mean = jnp.mean(total_loss[0])
    logger.info(total_loss_mean)


@jax.jit
def rollout(actions):
    def step(state, a):
        state = state + 0.1 * a
        return state, jnp.sum(state**2)

    _, costs = jax.lax.scan(step, jnp.zeros(2), actions)
    total_loss = (costs, costs.max())
    _log_loss(total_loss)
    return costs.sum()


print(rollout(jnp.ones((5, 2))))
print(open("/tmp/covo_mpc_debug.log").read().splitlines()[-1])
