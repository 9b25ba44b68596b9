# Report: https://github.com/patrick-kidger/diffrax/issues/379
# What the user did: passed max_steps into a jitted ODE solve as an argument; the solver branches on `if max_steps == 1`
# Raises: TracerBoolConversionError
import jax
import jax.numpy as jnp


def solve(f, y0, t0, t1, dt, max_steps):
    if max_steps == 1:
        return y0 + (t1 - t0) * f(t0, y0)

    def body(carry):
        t, y, n = carry
        return t + dt, y + dt * f(t, y), n + 1

    def cond(carry):
        t, _, n = carry
        return (t < t1) & (n < max_steps)

    return jax.lax.while_loop(cond, body, (t0, y0, 0))[1]


def vector_field(t, y):
    return -y


@jax.jit
def run(y0, max_steps):
    return solve(vector_field, y0, 0.0, 1.0, 0.01, max_steps)


print(solve(vector_field, jnp.ones(2), 0.0, 1.0, 0.01, 4096))
print(run(jnp.ones(2), 4096))
