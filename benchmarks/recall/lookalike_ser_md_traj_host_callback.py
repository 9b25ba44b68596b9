# Report: https://github.com/apax-hub/apax/pull/139
# What the user did: wrote MD trajectory frames from within the jitted simulation loop through a host callback, every sampling_rate steps
# Raises: silent
import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import io_callback

frames = []


def write_frame(step, positions):
    frames.append((int(step), np.asarray(positions)))


def md_step(carry, step):
    positions, velocities = carry
    velocities = velocities - 0.01 * positions
    positions = positions + 0.01 * velocities
    jax.lax.cond(
        step % 5 == 0,
        lambda: io_callback(write_frame, None, step, positions, ordered=True),
        lambda: None,
    )
    return (positions, velocities), None


@jax.jit
def run(positions, velocities):
    (positions, velocities), _ = jax.lax.scan(md_step, (positions, velocities), jnp.arange(20))
    return positions


print(run(jnp.ones((3, 3)), jnp.zeros((3, 3))).sum(), len(frames))
