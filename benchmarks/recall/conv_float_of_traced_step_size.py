# Report: https://github.com/blackjax-devs/blackjax/issues/1029
# What the user did: jitted an adaptation run that passes float(step_size_ma) (a jnp.exp of adapted state) to a helper
# Raises: ConcretizationTypeError
import jax
import jax.numpy as jnp


def _apply_length_floor(trajectory_length, lambda_max, floor, max_steps, step_size):
    floor_length = floor / jnp.sqrt(lambda_max)
    capped = jnp.minimum(jnp.maximum(trajectory_length, floor_length), max_steps * step_size)
    return capped, capped < floor_length


def run(log_step_size_ma, trajectory_length_ma, lambda_max):
    step_size_ma = jnp.exp(log_step_size_ma)
    length, clipped = _apply_length_floor(trajectory_length_ma, lambda_max, 0.5, 100, float(step_size_ma))
    return step_size_ma, length, clipped


print(run(jnp.log(0.1), 1.0, 4.0))
print(jax.jit(run)(jnp.log(0.1), 1.0, 4.0))
