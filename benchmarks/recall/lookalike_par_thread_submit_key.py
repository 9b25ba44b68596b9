# Report: https://github.com/jax-ml/jax/issues/4228
# What the user did: submitted a function drawing jax.random.uniform from a concrete key to a ThreadPoolExecutor, from top-level code (the thread-pool half of the report, which works)
# Raises: none (a look-alike that runs correctly: the key passed to the threads is a concrete array)
import concurrent.futures

from jax.random import PRNGKey, uniform


def draw(my_key):
    return uniform(my_key, (3, 3))


key = PRNGKey(333)
print(uniform(key, (3, 3)))

jobs = []
with concurrent.futures.ThreadPoolExecutor() as e:
    for _ in range(3):
        jobs.append(e.submit(draw, key))
    for future in jobs:
        print("thread job")
        print(future.result())
