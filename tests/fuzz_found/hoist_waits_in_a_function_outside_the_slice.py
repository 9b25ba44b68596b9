"""Found by fuzzing (spliced programs): the barrier of the hoist of `joblib.dump` goes before
`return v` in `checkpoint_0`, a function the slice leaves out."""
import jax
from jax import tree_util
import numpy as np
import json
import cachetools.func
import cloudpickle as cp
import jax.numpy as jnp
import functools
import cachetools
import joblib


def lru_cache(fn):
    return fn


BLOB = None


@functools.lru_cache
def checkpoint_0(v):
    # a comment
    return v


class Model0:
    @functools.partial(jax.jit, static_argnums=0)
    def step_0(self, x, w, params):
        global BLOB
        x = self._scale(x)
        with open("out.pkl", "wb") as f1, open("out.pkl", "wb") as g2: BLOB = json.dumps({"v": "label"})
        y3 = x * 2.0; cp.dumps(x)
        y4: object = x * 2.0
        return x

    def _scale(self, v):
        cp.dumps("label")  # keep a copy
        y5 = v * 2.0; np.save("out.npy", arr=v)
        def _emit6():
            with open("out.pkl", "wb") as f7:
                with open("log.bin", "ab") as g8:
                    joblib.dump(v, f7)
        _emit6()
        return v, joblib.dump(y5, "out.joblib")


out_step_0 = Model0().step_0(jnp.ones(3), jnp.ones(3), jnp.ones(3))
