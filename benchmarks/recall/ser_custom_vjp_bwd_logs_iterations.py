# Report: https://github.com/jax-ml/jax/issues/1197
# What the user did: logged internal properties of a custom VJP (the iteration count of its solver) from inside the rule
# Raises: silent
import logging

import jax
import jax.numpy as jnp

logging.basicConfig(filename="/tmp/jax1197_solver.log", filemode="w", level=logging.INFO)
log = logging.getLogger("implicit")


def fixed_point(f, x0, n_iter=20):
    def body(carry, _):
        x, it = carry
        return (f(x), it + 1), None

    (x, it), _ = jax.lax.scan(body, (x0, 0), None, length=n_iter)
    return x, it


@jax.custom_vjp
def solve(a):
    x, _ = fixed_point(lambda x: 0.5 * jnp.cos(x) + a, jnp.zeros_like(a))
    return x


def solve_fwd(a):
    x = solve(a)
    return x, x


def solve_bwd(x, g):
    _, iters = fixed_point(lambda v: 0.5 * -jnp.sin(x) * v + g, jnp.zeros_like(g))
    log.info("backward linear solve took %s iterations, residual %s", iters, x)
    return (g / (1.0 + 0.5 * jnp.sin(x)),)


solve.defvjp(solve_fwd, solve_bwd)

print(jax.jit(jax.grad(lambda a: solve(a).sum()))(jnp.ones(3)))
with open("/tmp/jax1197_solver.log") as f:
    print(f.read())
