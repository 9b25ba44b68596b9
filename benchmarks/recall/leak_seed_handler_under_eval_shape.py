# Report: https://github.com/pyro-ppl/numpyro/issues/1886
# What the user did: called get_model_relations on a seeded model; it runs the model under jax.eval_shape, and the seed handler splits and stores its key on itself for each sample site
# Raises: Exception (leak checker, as in the report: "Leaked trace")
import jax
import jax.random as jr


class seed:
    def __init__(self, fn, rng_seed):
        self.fn = fn
        self.rng_key = rng_seed

    def sample(self, dist_fn):
        self.rng_key, sub = jr.split(self.rng_key)
        return dist_fn(sub)

    def __call__(self):
        return self.fn(self)


def model(handler):
    m = handler.sample(lambda k: jr.normal(k))
    return handler.sample(lambda k: jax.numpy.exp(m + jr.normal(k)))


seeded_model = seed(model, jr.key(0))


def get_model_relations(fn):
    return jax.eval_shape(fn)


with jax.checking_leaks():
    print(get_model_relations(seeded_model))
