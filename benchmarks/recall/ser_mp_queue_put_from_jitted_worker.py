# Report: https://github.com/jax-ml/jax/issues/14184
# What the user did: a worker put jax arrays on a multiprocessing.Queue; here the put happens inside the worker's jitted step
# Raises: ConcretizationTypeError (in the queue's feeder thread; the get then times out)
import multiprocessing as mp
import queue

import jax
import jax.numpy as jnp


def make_step(q):
    @jax.jit
    def step(x):
        y = jnp.tanh(x) * 2
        q.put(y)
        return y

    return step


if __name__ == "__main__":
    q = mp.Queue(maxsize=4)
    make_step(q)(jnp.ones(10))
    try:
        print(q.get(timeout=10))
    except queue.Empty:
        raise SystemExit("nothing arrived on the queue")
