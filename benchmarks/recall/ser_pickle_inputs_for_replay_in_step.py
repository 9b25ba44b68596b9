# Report: https://github.com/jax-ml/jax/issues/28409
# What the user did: pickled the arrays that caused interesting behaviour so they could be replayed while debugging; here from the jitted step that sees them
# Raises: ConcretizationTypeError
import pickle

import jax
import jax.numpy as jnp


def dump_for_replay(name, **arrays):
    with open(f"/tmp/replay_{name}.pkl", "wb") as f:
        pickle.dump(arrays, f)


@jax.jit
def step(params, batch):
    logits = batch @ params
    if True:  # the debug switch the user flipped on
        dump_for_replay("step", params=params, batch=batch, logits=logits)
    return jax.nn.logsumexp(logits)


print(step(jnp.ones((4, 2)), jnp.ones((3, 4))))
