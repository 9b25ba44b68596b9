# Report: https://github.com/jax-ml/jax/issues/7545
# What the user did: ran check_grads on a function of NumPy parameters whose fori_loop body indexes them with the loop counter (grad alone worked)
# Raises: TracerArrayConversionError
import jax
import jax.numpy as jnp
import numpy as np
from jax.test_util import check_grads

deg2rad = jnp.pi / 180.0


def radec2lm(radec, ra0=177.1 * deg2rad, dec0=-29.9 * deg2rad):
    source = radec.shape[0]
    lm = jnp.zeros((source, 2), radec.dtype)

    def body(s, lm):
        ra, dec = radec[s]
        delta_ra = ra - ra0
        l = jnp.cos(dec) * jnp.sin(delta_ra)
        m = jnp.sin(dec) * jnp.cos(dec0) - jnp.cos(dec) * jnp.sin(dec0) * jnp.cos(delta_ra)
        return lm.at[s, 0].set(l).at[s, 1].set(m)

    return jax.lax.fori_loop(0, source, body, lm)


def predict(params):
    lm = radec2lm(params["radec"])
    return jnp.sum(params["stokes"][:, None] * lm)


params = {"radec": np.array([[3.09, -0.52], [3.1, -0.53]], dtype=np.float32), "stokes": np.array([1.0, 0.5], dtype=np.float32)}
print(jax.grad(predict)(params))
check_grads(predict, (params,), order=1, modes=["rev"])
print("gradients check")
