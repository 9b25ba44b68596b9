# Report: https://github.com/jax-ml/jax/pull/39438
# What the user did: a custom_vjp whose backward rule writes the incoming gradient into a jax Ref passed as an argument (the documented way to stash a gradient)
# Raises: none (a look-alike that runs correctly: the gradient goes through a Ref argument, not Python state)
import jax
import jax.numpy as jnp


@jax.custom_vjp
def stash_grads(grads_ref, x):
    return x


def stash_grads_fwd(grads_ref, x):
    return x, grads_ref


def stash_grads_bwd(grads_ref, g):
    grads_ref[...] = g
    return None, g


stash_grads.defvjp(stash_grads_fwd, stash_grads_bwd)


def f(x, grads_ref):
    x = stash_grads(grads_ref, x)
    return jnp.sin(x)


grads_ref = jax.new_ref(0.0)
jax.grad(f)(1.0, grads_ref)
print(grads_ref)
