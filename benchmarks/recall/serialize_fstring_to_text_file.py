import jax
import jax.numpy as jnp


@jax.jit
def f(x):
    loss = jnp.sum(x**2)
    with open("loss.txt", "a") as fh:
        fh.write(f"{loss}\n")
    return x * 2


f(jnp.arange(3.0))
f(jnp.arange(3.0) + 1)
print(open("loss.txt").read())
