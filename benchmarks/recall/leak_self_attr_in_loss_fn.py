# Report: https://github.com/pyro-ppl/numpyro/issues/1982
# What the user did: the inference object's loss method, run under jit and grad, set `self.loss_temperature` from a traced value
# Raises: UnexpectedTracerError
import jax
import jax.numpy as jnp


class SteinVI:
    def __init__(self):
        self.loss_temperature = 1.0

    def _loss(self, particles):
        energy = jnp.sum(particles**2)
        self.loss_temperature = energy / particles.shape[0]
        return energy / self.loss_temperature

    def update(self, particles):
        grads = jax.grad(self._loss)(particles)
        return particles - 0.1 * grads


vi = SteinVI()
update = jax.jit(vi.update)
particles = update(jnp.ones(4))
print(vi.loss_temperature * 2)
