"""Run two steps and report the last snapshot: `python -m lab.run` from examples/after_call."""
import pickle

import jax.numpy as jnp

from lab.steps import SNAPSHOTS, _forward


def main():
    w = jnp.array([[1.0, 0.0], [0.0, 0.5]])
    for scale in (1.0, 2.0):
        total = _forward(w, jnp.array([0.5, 1.0]) * scale)
        # Read right after the call: a host callback could still be pending on a GPU or TPU.
        last = pickle.loads(SNAPSHOTS[-1])
        print(round(float(total), 4), [round(v, 4) for v in last.tolist()])


main()
