# Report: https://github.com/jax-ml/jax/issues/5595
# What the user did: put @jit directly on an instance method (jit(self.f) in __init__ had worked), so self became a traced argument
# Raises: TypeError
import jax


class Agent:
    def __init__(self, gain):
        self.gain = gain

    @jax.jit
    def act(self, x):
        return self.gain * x


agent = Agent(2.0)
print(agent.act(5.0))
