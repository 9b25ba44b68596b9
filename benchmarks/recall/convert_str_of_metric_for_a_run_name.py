"""Reported pattern: a sweep names each checkpoint folder after the validation metric computed
inside the jitted evaluation step. Every folder gets the same name, the tracer's, and each run
overwrites the last."""
import jax
import jax.numpy as jnp

RUN_NAMES = []


@jax.jit
def evaluate(params, x):
    accuracy = jnp.mean(jnp.tanh(x @ params) > 0)
    RUN_NAMES.append("ckpt-acc-" + str(accuracy))
    return accuracy


for seed in range(3):
    params = jax.random.normal(jax.random.key(seed), (4,))
    evaluate(params, jnp.eye(4) * (seed + 1))
print(RUN_NAMES)
