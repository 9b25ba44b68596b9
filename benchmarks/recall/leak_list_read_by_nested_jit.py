# Report: https://github.com/jax-ml/jax/issues/38460
# What the user did: appended a traced argument to a module-level list read by a nested jitted helper, traced once under eval_shape, then called the function again
# Raises: UnexpectedTracerError
import jax
import jax.numpy as jnp

stash = []


@jax.jit
def attach(token):
    [saved] = stash
    return jnp.concatenate([token, saved])


def run(x):
    stash.append(x)
    out = attach(x)
    stash.clear()
    return out


jax.eval_shape(run, jnp.array([1.0]))
print(run(jnp.array([1.0])))
