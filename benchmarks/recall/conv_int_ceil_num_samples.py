# Report: https://github.com/asantini29/phentax/pull/28
# What the user did: computed a sample count with int(jnp.ceil(T / delta_t)) inside a waveform generator called under jax.jit
# Raises: ConcretizationTypeError
import jax
import jax.numpy as jnp


class Waveform:
    def __init__(self, delta_t):
        self.delta_t = delta_t

    def initial_processing(self, duration):
        n_samples = int(jnp.ceil(duration / self.delta_t))
        return n_samples

    def __call__(self, duration, mass):
        n = self.initial_processing(duration)
        t = jnp.linspace(0.0, duration, 64)
        return jnp.sin(mass * t) * n


model = Waveform(delta_t=0.5)
print(model(4.0, 1.2))
print(jax.jit(model)(4.0, 1.2))
