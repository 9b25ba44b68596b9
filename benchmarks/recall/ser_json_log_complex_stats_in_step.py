# Report: https://github.com/netket/netket/pull/1258
# What the user did: a JSON logger serialised complex expectation values with a default= hook returning {"real", "imag"}; here fed from the jitted VMC step
# Raises: TypeError
import json

import jax
import jax.numpy as jnp


def default(obj):
    if jnp.iscomplexobj(obj):
        return {"real": obj.real, "imag": obj.imag}
    raise TypeError(f"Object of type {type(obj).__name__} is not JSON serializable")


class JsonLog:
    def __init__(self, path):
        self.path = path

    def __call__(self, step, log_data):
        with open(self.path, "a") as f:
            f.write(json.dumps({"step": step, **log_data}, default=default) + "\n")


logger = JsonLog("/tmp/netket_run.log")


@jax.jit
def vmc_step(params, samples):
    local_energies = jnp.exp(1j * samples @ params)
    energy = {"Mean": local_energies.mean(), "Variance": jnp.var(local_energies)}
    logger(0, {"Energy": energy})
    return params - 0.01 * jnp.real(energy["Mean"])


print(vmc_step(jnp.ones(3), jnp.ones((8, 3))))
