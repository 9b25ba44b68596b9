# Report: https://github.com/scipy/scipy/pull/22219
# What the user did: jitted a k-means whose input helper checks finiteness with `if not xp.all(xp.isfinite(a)): raise`
# Raises: TracerBoolConversionError
import jax
import jax.numpy as jnp


def _asarray(a, check_finite=True):
    a = jnp.asarray(a)
    if check_finite and not jnp.all(jnp.isfinite(a)):
        raise ValueError("array must not contain infs or NaNs")
    return a


def kmeans_step(obs, centroids):
    obs = _asarray(obs, check_finite=True)
    d = jnp.sum((obs[:, None, :] - centroids[None, :, :]) ** 2, axis=-1)
    labels = jnp.argmin(d, axis=1)
    one_hot = jax.nn.one_hot(labels, centroids.shape[0])
    return (one_hot.T @ obs) / jnp.maximum(one_hot.sum(0)[:, None], 1.0)


obs = jax.random.normal(jax.random.PRNGKey(0), (20, 2))
centroids = obs[:3]
print(kmeans_step(obs, centroids))
print(jax.jit(kmeans_step)(obs, centroids))
