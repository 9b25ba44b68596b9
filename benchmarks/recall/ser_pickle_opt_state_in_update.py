# Report: https://github.com/jax-ml/jax/issues/1078
# What the user did: saved the optimizer state to a file with pickle to restart the optimisation later; here the save is in the jitted update
# Raises: ConcretizationTypeError
import pickle

import jax
import jax.numpy as jnp
import optax

opt = optax.rmsprop(2e-2)


def loss(x):
    return jnp.sum((x - 3.0) ** 2)


@jax.jit
def update(i, x, opt_state):
    g = jax.grad(loss)(x)
    updates, opt_state = opt.update(g, opt_state, x)
    with open("/tmp/jax1078_opt_state.pkl", "wb") as f:
        pickle.dump((i, opt_state), f)
    return optax.apply_updates(x, updates), opt_state


x = jnp.zeros(2)
opt_state = opt.init(x)
for i in range(3):
    x, opt_state = update(i, x, opt_state)
print(x)
