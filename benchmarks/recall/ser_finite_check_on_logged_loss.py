# Report: https://github.com/goodfire-ai/spd/issues/703
# What the user did: asked for a finite-check (crash on NaN/inf) on the losses pulled out for logging in the JAX train step; here written in the jitted step
# Raises: ConcretizationTypeError
import math

import jax
import jax.numpy as jnp


@jax.jit
def train_step(params, x):
    losses = {"recon": jnp.mean((x @ params) ** 2), "l1": jnp.sum(jnp.abs(params))}
    total = losses["recon"] + 0.1 * losses["l1"]
    for name, value in {**losses, "total": total}.items():
        if not math.isfinite(float(value)):
            raise FloatingPointError(f"non-finite {name} loss")
    return params - 0.01 * jax.grad(lambda p: jnp.mean((x @ p) ** 2))(params), total


print(train_step(jnp.ones(3), jnp.ones((2, 3)))[1])
