# Report: https://github.com/jax-ml/jax/issues/2783
# What the user did: branched on float(x) inside a function differentiated with jax.grad (int(x) had worked)
# Raises: ConcretizationTypeError
import jax


def absolute(x):
    return x if float(x) >= 0.0 else -x


print(absolute(3.0))
print(jax.grad(absolute)(3.0))
