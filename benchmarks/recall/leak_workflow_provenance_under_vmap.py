# Report: https://github.com/TARPS-group/prob-pipe/issues/163
# What the user did: called a WorkflowFunction-wrapped log_prob op inside jax.vmap; the wrapper records each call's inputs and output as provenance metadata in a module-level registry
# Raises: UnexpectedTracerError
import jax
import jax.numpy as jnp

PROVENANCE = []


class WorkflowFunction:
    def __init__(self, fn):
        self.fn = fn

    def __call__(self, *args):
        out = self.fn(*args)
        PROVENANCE.append({"op": self.fn.__name__, "inputs": args, "output": out})
        return out


class Normal:
    def __init__(self, loc, scale, name):
        self.loc, self.scale, self.name = loc, scale, name

    def _log_prob(self, v):
        z = (v - self.loc) / self.scale
        return -0.5 * z**2 - jnp.log(self.scale) - 0.5 * jnp.log(2 * jnp.pi)


@WorkflowFunction
def log_prob(dist, value):
    return dist._log_prob(value)


g = Normal(loc=0.0, scale=1.0, name="x")
log_prob(g, jnp.array(0.5))
print(jax.vmap(lambda v: log_prob(g, v))(jnp.linspace(-2, 2, 5)))
print(jnp.exp(PROVENANCE[-1]["output"]))
