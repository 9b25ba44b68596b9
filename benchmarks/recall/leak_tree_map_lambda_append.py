"""A jitted function hands every leaf of its input to a lambda that appends it to a
module-level list (a `tree_map` used for its side effect): the list keeps the tracers."""
import jax
import jax.numpy as jnp

LEAVES = []


@jax.jit
def scaled(tree):
    jax.tree_util.tree_map(lambda leaf: LEAVES.append(leaf), tree)
    return jax.tree_util.tree_map(lambda leaf: leaf * 2, tree)


scaled({"a": jnp.ones(2), "b": jnp.zeros(1)})
print([float(leaf.sum()) for leaf in LEAVES])
