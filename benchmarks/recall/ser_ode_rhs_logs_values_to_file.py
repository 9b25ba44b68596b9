# Report: https://github.com/flo-schu/pymob/issues/186
# What the user did: wanted the ODE right-hand side of a jitted JAX solve to log its numbers to a debug file
# Raises: silent
import logging

import jax
import jax.numpy as jnp
from jax.experimental.ode import odeint

debug_log = logging.getLogger("pymob.debug")
debug_log.setLevel(logging.DEBUG)
debug_log.addHandler(logging.FileHandler("/tmp/pymob_debug.log", mode="w"))


def tktd_rhs(y, t, k_d, z):
    damage, survival = y
    debug_log.debug("t=%s damage=%s survival=%s", t, damage, survival)
    d_damage = k_d * (1.0 - damage)
    d_survival = -jnp.maximum(damage - z, 0.0) * survival
    return jnp.stack([d_damage, d_survival])


@jax.jit
def simulate(k_d, z):
    ts = jnp.linspace(0.0, 5.0, 6)
    return odeint(tktd_rhs, jnp.array([0.0, 1.0]), ts, k_d, z)


print(simulate(0.5, 0.2)[-1])
with open("/tmp/pymob_debug.log") as f:
    print(f.read().splitlines()[:2])
