# Report: https://github.com/gbionics/jaxsim/issues/43
# What the user did: replaced a simulator's step method with `sim.step = jax.jit(sim.step)`; step stores the new state on the simulator object
# Raises: Exception (leak checker, which the report ran with: "Leaked trace")
import jax
import jax.numpy as jnp

jax.config.update("jax_check_tracer_leaks", True)


class JaxSim:
    def __init__(self, step_size):
        self.step_size = step_size
        self.data = {"q": jnp.zeros(2), "v": jnp.ones(2), "t": jnp.float32(0.0)}

    def step(self):
        q, v = self.data["q"], self.data["v"]
        v = v - self.step_size * jnp.sin(q)
        q = q + self.step_size * v
        self.data = {"q": q, "v": v, "t": self.data["t"] + self.step_size}
        return self.data


sim = JaxSim(step_size=0.001)
sim.step = jax.jit(sim.step)
step_data = sim.step()
print(step_data)
