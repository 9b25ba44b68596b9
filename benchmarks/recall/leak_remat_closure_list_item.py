# Report: https://github.com/jax-ml/jax/pull/4663
# What the user did: a rematerialized inner function incremented an item of a list from the enclosing jitted function
# Raises: silent (the second call sees the first call's leaked value: prints 1.0 where plain Python gives 2.0)
import jax
import jax.numpy as jnp


def f():
    seq = [jnp.zeros([])]

    def g():
        seq[0] += 1
        return seq[0]

    jax.remat(g)()
    return jax.remat(g)()


print(jax.jit(f)())
