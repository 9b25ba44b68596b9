import jax
import jax.numpy as jnp


def loss(w, x):
    out = jnp.sum((w * x) ** 2)
    print(f"loss = {out:.3f}")
    return out


jax.grad(loss)(jnp.ones(2), jnp.ones(2))
