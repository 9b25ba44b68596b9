# Report: https://github.com/Joshuaalbert/jaxns/issues/171
# What the user did: json.dump of the sampler's results pytree (save_results); here called at the end of the jitted run
# Raises: TypeError
import json
from typing import NamedTuple

import jax
import jax.numpy as jnp


class NestedSamplerResults(NamedTuple):
    log_Z_mean: jnp.ndarray
    samples: jnp.ndarray


def save_results(results, save_file):
    with open(save_file, "w") as fp:
        json.dump(results._asdict(), fp, indent=2)


@jax.jit
def run(key):
    samples = jax.random.normal(key, (16, 2))
    results = NestedSamplerResults(jax.nn.logsumexp(-0.5 * jnp.sum(samples**2, -1)), samples)
    save_results(results, "/tmp/jaxns_toy_model_results.json")
    return results


print(run(jax.random.PRNGKey(0)).log_Z_mean)
