# Report: https://github.com/codestella/putting-nerf-on-a-diet/pull/11
# What the user did: jitted a NeRF single_step that takes N_samples as a plain argument and builds its sample grid from it
# Raises: ConcretizationTypeError
import jax
import jax.numpy as jnp


def render_rays(params, rays_o, rays_d, near, far, N_samples):
    t = jnp.linspace(near, far, N_samples)
    pts = rays_o[:, None, :] + rays_d[:, None, :] * t[None, :, None]
    density = jax.nn.relu(pts @ params)
    return jnp.sum(density, axis=1)


def single_step(params, rays_o, rays_d, target, near, far, N_samples):
    def loss_fn(p):
        return jnp.mean((render_rays(p, rays_o, rays_d, near, far, N_samples) - target) ** 2)

    loss, grads = jax.value_and_grad(loss_fn)(params)
    return params - 0.01 * grads, loss


single_step_jit = jax.jit(single_step)
params = jnp.ones((3, 1))
rays_o = jnp.zeros((8, 3))
rays_d = jnp.ones((8, 3))
print(single_step_jit(params, rays_o, rays_d, jnp.ones((8, 1)), 2.0, 6.0, 64)[1])
