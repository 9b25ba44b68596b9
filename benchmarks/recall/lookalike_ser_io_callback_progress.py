# Report: https://github.com/jax-ml/jax/issues/3194
# What the user did: a progress bar fed from a jitted trajectory sampler through a host callback (id_tap then, io_callback now)
# Raises: silent
import jax
import jax.numpy as jnp
from jax.experimental import io_callback

progress = {"iteration": 0}


def update_progress_bar(state):
    progress["iteration"] += 1
    return state


def iterate(state, _):
    state = io_callback(update_progress_bar, jax.ShapeDtypeStruct(state.shape, state.dtype), state, ordered=True)
    state = 0.9 * state + 1.0
    return state, state


def sample_trajectory(x_init, iteration_limit):
    return jax.lax.scan(iterate, x_init, None, length=iteration_limit)


sample = jax.jit(sample_trajectory, static_argnums=1)
final, trajectory = sample(jnp.zeros(2), 10)
print(final, progress["iteration"])
