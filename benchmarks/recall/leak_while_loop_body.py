import jax
import jax.numpy as jnp

TRACE = []


def cond(s):
    return s[0] < 3


def body(s):
    TRACE.append(s[1])
    return s[0] + 1, s[1] * 2


jax.lax.while_loop(cond, body, (0, jnp.float32(1.0)))
print(TRACE[0] + 1)
