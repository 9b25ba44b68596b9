# Report: https://github.com/jax-ml/jax/issues/12862
# What the user did: put jax arrays into a JSON response via .tolist() (the workaround suggested), here in the jitted scorer
# Raises: ConcretizationTypeError
import json

import jax
import jax.numpy as jnp

W = jnp.arange(6.0).reshape(3, 2)


@jax.jit
def score_request(features):
    scores = jax.nn.softmax(features @ W)
    return json.dumps({"scores": scores.tolist(), "best": int(jnp.argmax(scores))})


print(score_request(jnp.ones(3)))
