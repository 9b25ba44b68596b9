import os
import tempfile

import jax
import jax.numpy as jnp


def train(xs, path):
    with open(path, "w") as log:

        @jax.jit
        def step(x):
            loss = (x**2).sum()
            log.write(f"{loss}\n")
            return loss

        for x in xs:
            step(x)
    print(open(path).read())


train([jnp.ones(2), jnp.ones(2) * 2], os.path.join(tempfile.mkdtemp(), "train.log"))
