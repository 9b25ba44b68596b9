# Report: https://github.com/jax-ml/jax/issues/7703
# What the user did: broadcast a dataclass(unsafe_hash=True) holding a device array as a pmap static_broadcasted_argnums argument
# Raises: ValueError
import dataclasses
from typing import Any

import jax


@dataclasses.dataclass(unsafe_hash=True)
class Scale:
    x: Any


x = jax.numpy.zeros([jax.local_device_count()])
c = Scale(x)


def f(c, x):
    return x * c.x


print(jax.pmap(f, static_broadcasted_argnums=0)(c, x))
