# Report: https://github.com/kokabsc/gwkokab/issues/205
# What the user did: a debug flag meant to flush the values seen by jittable code (the likelihood) to a file
# Raises: silent
import jax
import jax.numpy as jnp

DEBUG = True
debug_file = open("/tmp/gwkokab_debug.txt", "w")


def log_likelihood(params, data):
    mu, log_sigma = params
    ll = jnp.sum(-0.5 * ((data - mu) / jnp.exp(log_sigma)) ** 2 - log_sigma)
    if DEBUG:
        print("mu", mu, "log_sigma", log_sigma, "ll", ll, file=debug_file, flush=True)
    return ll


@jax.jit
def neg_grad(params, data):
    return jax.grad(lambda p: -log_likelihood(p, data))(params)


data = jnp.linspace(-1.0, 1.0, 10)
params = (jnp.asarray(0.3), jnp.asarray(0.0))
for _ in range(3):
    g = neg_grad(params, data)
    params = (params[0] - 0.1 * g[0], params[1] - 0.1 * g[1])
debug_file.close()
with open("/tmp/gwkokab_debug.txt") as f:
    print(f.read())
