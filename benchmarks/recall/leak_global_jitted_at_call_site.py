import jax

LAST = None


def step(x):
    global LAST
    LAST = x
    return x + 1


fast = jax.jit(step)
fast(1.0)
print(LAST + 1)
