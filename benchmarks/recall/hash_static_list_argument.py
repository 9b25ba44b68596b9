# Report: https://github.com/genjax-community/genjax/issues/1179
# What the user did: jitted a function with static_argnums=(0,) and passed it a list (wrapped in a const container in the original)
# Raises: ValueError
import jax


def first_plus_one(items):
    return items[0] + 1


first_plus_one_jit = jax.jit(first_plus_one, static_argnums=(0,))

print(first_plus_one([2]))
print(first_plus_one_jit([2]))
