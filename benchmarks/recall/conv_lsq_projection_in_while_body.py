# Report: https://github.com/google/jaxopt/issues/70
# What the user did: ran a projected-gradient solver whose projection onto a polyhedron calls a NumPy-backed solver in the loop body
# Raises: TracerArrayConversionError
import jax
import jax.numpy as jnp
from scipy.optimize import lsq_linear


def f(x):
    return x[0] ** 2 - x[1] ** 2


def projection_box(x, hyperparams):
    lower, upper = hyperparams
    result = lsq_linear(jnp.eye(2), x, bounds=(lower, upper))
    return jnp.asarray(result.x)


def projected_gradient(fun, init_params, hyperparams_proj, stepsize=0.1, maxiter=50):
    grad_fun = jax.grad(fun)

    def cond(state):
        return state[1] < maxiter

    def body(state):
        x, it = state
        x = projection_box(x - stepsize * grad_fun(x), hyperparams_proj)
        return x, it + 1

    return jax.lax.while_loop(cond, body, (init_params, 0))[0]


print(projected_gradient(f, jnp.array([0.0, 1.0]), (jnp.array([0.0, 0.0]), jnp.array([1.0, 1.0]))))
