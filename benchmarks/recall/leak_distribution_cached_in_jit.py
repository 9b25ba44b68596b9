# Report: https://github.com/google-deepmind/distrax/issues/230
# What the user did: returned a MultivariateNormalDiag from a jitted lambda; its constructor memoizes the scale operator in a class-level cache keyed by shape
# Raises: Exception (leak checker: "Leaked trace")
import jax
import jax.numpy as jnp

jax.config.update("jax_check_tracer_leaks", True)


class MultivariateNormalDiag:
    _scale_cache = {}

    def __init__(self, loc, scale_diag=None):
        self.loc = loc
        if scale_diag is None:
            key = loc.shape
            if key not in MultivariateNormalDiag._scale_cache:
                MultivariateNormalDiag._scale_cache[key] = jnp.ones_like(loc)
            scale_diag = MultivariateNormalDiag._scale_cache[key]
        self.scale_diag = scale_diag

    def mean(self):
        return self.loc


jax.tree_util.register_pytree_node(
    MultivariateNormalDiag,
    lambda d: ((d.loc, d.scale_diag), None),
    lambda _, children: MultivariateNormalDiag(*children),
)

jitted_mvn = jax.jit(lambda: MultivariateNormalDiag(loc=jnp.zeros(1)))
print(jitted_mvn().mean())
