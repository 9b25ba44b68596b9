# Report: https://github.com/f0uriest/quadax/issues/18
# What the user did: called a quadrature routine inside jit; it maps the integrand to the unit interval with a closure over the (traced) interval and hands that closure to a jitted kernel as a static argument
# Raises: Exception (leak checker: "Leaked trace")
from functools import partial

import jax
import jax.numpy as jnp


@partial(jax.jit, static_argnums=0)
def _gauss_kronrod(fun):
    nodes = jnp.linspace(0.0, 1.0, 15)
    return jnp.trapezoid(jax.vmap(fun)(nodes), nodes)


def map_interval(fun, interval):
    a, b = interval[0], interval[1]

    def mapped(t):
        return fun(a + (b - a) * t) * (b - a)

    return mapped


def quadgk(fun, interval):
    return _gauss_kronrod(map_interval(fun, jnp.asarray(interval)))


@jax.jit
def integral(interval):
    return quadgk(jnp.square, interval)


with jax.checking_leaks():
    print(jax.block_until_ready(integral(jnp.array([0.0, 1.0]))))
