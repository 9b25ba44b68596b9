# Report: https://github.com/jax-ml/jax/issues/28418
# What the user did: jitted a method with static self whose __hash__ reads a mutable attribute (no __eq__), then changed the attribute
# Raises: silent
from functools import partial

import jax


class Stepper:
    def __init__(self):
        self.a = 1

    @partial(jax.jit, static_argnums=0)
    def f(self):
        print("tracing")
        return self.a + 1

    def __hash__(self):
        return hash(self.a)


for _ in range(5):
    stepper = Stepper()
    print(stepper.f())
    stepper.a = 2
    print(stepper.f())
