# Report: https://github.com/jax-ml/jax/issues/1050
# What the user did: wanted "{} = {}".format(name, device_value) output from a JIT'ed function that is only lowered (JAX-to-HLO export)
# Raises: silent
import jax
import jax.numpy as jnp

trace_log = open("/tmp/jax1050_values.txt", "w")


def model(x, scale):
    y = jnp.tanh(x * scale)
    trace_log.write("{} = {}\n".format("y", y))
    return y.sum()


hlo = jax.jit(model).lower(jnp.ones(4), 2.0).as_text()
trace_log.close()
print(len(hlo) > 0)
with open("/tmp/jax1050_values.txt") as f:
    print(f.read())
