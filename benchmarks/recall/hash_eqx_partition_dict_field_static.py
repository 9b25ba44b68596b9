# Report: https://github.com/patrick-kidger/equinox/issues/1089
# What the user did: partitioned an eqx.Module holding a dict field and passed the static half to jax.jit via static_argnames
# Raises: ValueError
import equinox as eqx
import jax


class Problem(eqx.Module):
    nested: dict

    def __init__(self, nested):
        self.nested = nested

    def __call__(self):
        return 1.0


def merge(parameters, static):
    return eqx.combine(parameters, static)()


model = Problem({0: 0.0})
print(model())
params, static = eqx.partition(model, eqx.is_array)
print(jax.jit(merge, static_argnames="static")(params, static))
