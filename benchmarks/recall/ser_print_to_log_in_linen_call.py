# Report: https://github.com/google/flax/issues/743
# What the user did: printed (to a log file) from inside a Flax module that runs under a jitted apply
# Raises: silent
import flax.linen as nn
import jax
import jax.numpy as jnp

log_file = open("/tmp/flax743_activations.log", "w")


class MLP(nn.Module):
    @nn.compact
    def __call__(self, x):
        h = nn.relu(nn.Dense(4)(x))
        print("hidden mean:", h.mean(), "max:", h.max(), file=log_file, flush=True)
        return nn.Dense(1)(h)


model = MLP()
params = model.init(jax.random.PRNGKey(0), jnp.ones((2, 3)))
apply = jax.jit(model.apply)
for i in range(3):
    apply(params, jnp.ones((2, 3)) * i)
log_file.close()
with open("/tmp/flax743_activations.log") as f:
    print(f.read())
