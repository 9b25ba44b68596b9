# Report: https://github.com/dodaltuin/passive-lv-gnn-emul/issues/1
# What the user did: np.array + np.save of a latent (z_local) inside a Flax module's __call__, which the training code jits
# Raises: TracerArrayConversionError
import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np


class DeepGraphEmulator(nn.Module):
    real_node_indices: tuple = (0, 1, 2)

    @nn.compact
    def __call__(self, V, sow_latents: bool = True):
        z_local = nn.Dense(4)(V)
        z_local = z_local[jnp.array(self.real_node_indices)]
        z_local_np = np.array(z_local)
        np.save("/tmp/z_local_1.npy", z_local_np)
        if sow_latents:
            return z_local
        return nn.Dense(1)(z_local)


model = DeepGraphEmulator()
V = jnp.ones((5, 3))
params = model.init(jax.random.PRNGKey(0), V)
apply = jax.jit(model.apply)
print(apply(params, V).shape)
