# Report: https://devgem.io/posts/debugging-jax-tracer-leaks-with-vmap-a-comprehensive-guide
# What the user did: a model whose __call__ caches its input on self (`self.cache = x`) was vmapped inside a value-and-grad loss; the batched loss leaked where the unbatched one did not
# Raises: Exception (leak checker: "Leaked trace BatchTrace")
import jax
import jax.numpy as jnp


class Model:
    def __init__(self, w):
        self.w = w
        self.cache = None

    def __call__(self, t, y0):
        self.cache = y0
        return self.w * jnp.sin(t) + y0


model = Model(jnp.float32(2.0))


def grad_loss_batch(w, ti, yi):
    model.w = w
    y_pred = jax.vmap(model, (None, 0))(ti, yi[:, 0])
    return jnp.mean((yi[:, 0] - y_pred) ** 2)


with jax.checking_leaks():
    print(jax.value_and_grad(grad_loss_batch)(jnp.float32(1.0), 0.5, jnp.ones((4, 1))))
