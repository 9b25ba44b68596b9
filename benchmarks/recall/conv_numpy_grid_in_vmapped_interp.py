# Report: https://github.com/DifferentiableUniverseInitiative/jax_cosmo/issues/121
# What the user did: called a linear interp (jnp ops) under vmap with NumPy grids xp, fp, which it indexes with traced positions
# Raises: TracerArrayConversionError
import jax
import jax.numpy as jnp
import numpy


def interp(x, xp, fp):
    ind = jnp.digitize(x, xp)
    ind = jnp.clip(ind, 1, len(xp) - 2)
    xi = xp[ind]
    s = jnp.sign(jnp.clip(x, xp[1], xp[-2]) - xi).astype(jnp.int32)
    a = (fp[ind + jnp.clip(s, 0, 1)] - fp[ind + jnp.clip(s, -1, 0)]) / (
        xp[ind + jnp.clip(s, 0, 1)] - xp[ind + jnp.clip(s, -1, 0)]
    )
    b = fp[ind] - a * xp[ind]
    return a * x + b


xp = numpy.array([0.0, 1.0, 2.0, 3.0])
fp = numpy.array([0.0, 1.0, 2.0, 3.0])
print(interp(jnp.array(1.5), jnp.asarray(xp), jnp.asarray(fp)))
print(jax.vmap(interp, in_axes=(0, None, None))(numpy.array([0.5, 1.5]), xp, fp))
