# Report: https://openillumi.com/en/en-jax-jit-class-method-stale-cache-fix
# What the user did: jitted an instance's bound method (jit(c.calc)) and then changed the attribute the method branches on
# Raises: silent
import jax
import jax.numpy as jnp


class CustomClass:
    def __init__(self, x, mul):
        self.x = x
        self.mul = mul

    def calc(self, y):
        if self.mul:
            return self.x * y
        return y


c = CustomClass(2, True)
calc = jax.jit(c.calc)
print(calc(jnp.array(3.0)))
c.mul = False
print(calc(jnp.array(3.0)))
