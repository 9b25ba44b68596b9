import jax
import jax.numpy as jnp
import optax

GRADS = []


def loss(p):
    return jnp.sum(p**2)


opt = optax.sgd(0.1)


@jax.jit
def train(p, s):
    g = jax.grad(loss)(p)
    GRADS.append(g)
    u, s = opt.update(g, s)
    return optax.apply_updates(p, u), s


p = jnp.ones(2)
train(p, opt.init(p))
