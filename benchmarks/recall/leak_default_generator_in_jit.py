# Report: https://github.com/google/objax/issues/147
# What the user did: a jitted predict op drew noise from a module-level key generator that splits and stores its own key, then built a new layer from the same generator
# Raises: UnexpectedTracerError
import jax
import jax.numpy as jnp


class Generator:
    def __init__(self, seed):
        self.key = jax.random.PRNGKey(seed)

    def __call__(self):
        self.key, sub = jax.random.split(self.key)
        return sub


DEFAULT_GENERATOR = Generator(0)


def normal(shape):
    return jax.random.normal(DEFAULT_GENERATOR(), shape)


class Linear:
    def __init__(self, nin, nout):
        self.w = normal((nin, nout))

    def __call__(self, x):
        return x @ self.w


model = Linear(3, 10)


def predict_op(x):
    return model(x) + normal((10,))


predict = jax.jit(predict_op)
predict(jnp.zeros((1, 3)))
Linear(3, 10)
