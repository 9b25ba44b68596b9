# Report: https://github.com/pyro-ppl/numpyro/issues/1998
# What the user did: a stateful adjoint tape recorded each factor computed inside a scanned HMM step, and the tape was read after the scan
# Raises: UnexpectedTracerError
import jax
import jax.numpy as jnp


class AdjointTape:
    def __init__(self):
        self.tape = []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def record(self, value):
        self.tape.append(value)
        return value


def hmm_log_density(tape, init, obs):
    def step(carry, y):
        factor = tape.record(carry + jnp.log1p(y**2))
        return jax.nn.logsumexp(factor) + carry, factor

    return jax.lax.scan(step, init, obs)


with AdjointTape() as tape:
    total, _ = hmm_log_density(tape, jnp.float32(0.0), jnp.arange(4.0))

approx = sum(tape.tape)
print(total, approx)
