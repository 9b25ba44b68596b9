"""Found by fuzzing (JAX-shaped programs): the move of `tree_map(lambda leaf: pk.dumps(...), w)`
after the `grad` call, as auxiliary output, returned the lambda's parameter `leaf` with `w`,
as if it were a traced local of the function."""
import pickle as pk

import jax
from jax import grad, tree_util

LAST = None


def update_0(w):
    global LAST
    LAST = jax.numpy.save("j.npy", (w, w))
    tree_util.tree_map(lambda leaf: pk.dumps(obj=leaf), w)
    return w


def main():
    out_0 = grad(update_0, argnums=-1)(jax.numpy.ones(3))


if __name__ == "__main__":
    main()
