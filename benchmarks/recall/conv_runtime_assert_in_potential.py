# Report: https://github.com/proteneer/timemachine/pull/800
# What the user did: jitted a reference nonbonded potential whose runtime validation asserts on jnp.all(...) of its inputs
# Raises: TracerBoolConversionError
import jax
import jax.numpy as jnp


def nonbonded(conf, params, box, lamb, runtime_validate=True):
    if runtime_validate:
        assert jnp.all(params[:, 1] >= 0), "negative sigma"
        assert jnp.all(jnp.diag(box) > 0), "degenerate box"
    charges, sigmas = params[:, 0], params[:, 1]
    d = conf[:, None, :] - conf[None, :, :]
    d = d - jnp.diag(box) * jnp.round(d / jnp.diag(box))
    r = jnp.sqrt(jnp.sum(d**2, axis=-1) + jnp.eye(conf.shape[0]))
    qq = charges[:, None] * charges[None, :]
    sig = 0.5 * (sigmas[:, None] + sigmas[None, :])
    u = qq / r + (sig / r) ** 12 - (sig / r) ** 6
    return jnp.sum(jnp.triu(u, 1)) * (1.0 - lamb)


conf = jnp.array([[0.0, 0.0, 0.0], [1.0, 0.2, 0.1], [0.3, 1.1, 0.5]])
params = jnp.array([[0.5, 0.3], [-0.5, 0.2], [0.1, 0.25]])
box = jnp.eye(3) * 5.0
print(nonbonded(conf, params, box, 0.1))
print(jax.jit(nonbonded)(conf, params, box, 0.1))
