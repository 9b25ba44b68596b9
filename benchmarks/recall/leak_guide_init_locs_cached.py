# Report: https://github.com/pyro-ppl/numpyro/issues/2062
# What the user did: passed an autoguide to get_model_relations (which traces it under jit); the guide caches its initial locations in `self._init_locs` on first trace, and later tracing of the guide failed
# Raises: UnexpectedTracerError
import jax
import jax.numpy as jnp


class AutoNormal:
    def __init__(self, init_scale=0.1):
        self.init_scale = init_scale
        self._init_locs = None

    def _setup(self, key):
        if self._init_locs is None:
            self._init_locs = {"a": jax.random.uniform(key, (), minval=-2.0, maxval=2.0)}

    def __call__(self, key):
        self._setup(key)
        loc = self._init_locs["a"]
        return loc + self.init_scale * jax.random.normal(jax.random.fold_in(key, 1))


guide = AutoNormal()


def get_model_relations(fn):
    return jax.jit(lambda key: fn(key))(jax.random.key(0))


get_model_relations(guide)
print(guide(jax.random.key(1)))
