# Report: https://github.com/jax-ml/jax/issues/1590
# What the user did: dumped a JAX agent to disk with dill; here the agent's jitted act kept its last observation on self
# Raises: ConcretizationTypeError
import dill
import jax
import jax.numpy as jnp


class Agent:
    def __init__(self, key):
        self.w = jax.random.normal(key, (4, 2))
        self.last_obs = None
        self.act = jax.jit(self._act)

    def _act(self, w, obs):
        self.last_obs = obs
        return jnp.argmax(obs @ w)

    def step(self, obs):
        return self.act(self.w, obs)


agent = Agent(jax.random.PRNGKey(0))
print(agent.step(jnp.ones(4)))
with open("/tmp/jax1590_agent.dill", "wb") as f:
    dill.dump(agent, f)
