# Report: https://github.com/jeremiecoullon/jax-tqdm/pull/20
# What the user did: updated a host progress bar from a scan through jax.debug.callback, casting the callback's array to int
# Raises: silent
import jax
import jax.numpy as jnp


class ProgressBar:
    def __init__(self, total):
        self.total = total
        self.n = 0

    def update(self, k):
        self.n += k
        print(f"{self.n}/{self.total}")


bar = ProgressBar(10)


def _update_bar(arg):
    bar.update(int(arg))


def step(carry, i):
    jax.lax.cond(
        i % 5 == 0,
        lambda: jax.debug.callback(_update_bar, 5, ordered=True),
        lambda: None,
    )
    return carry + i, carry


@jax.jit
def run(xs):
    return jax.lax.scan(step, 0, xs)


print(run(jnp.arange(10))[0])
