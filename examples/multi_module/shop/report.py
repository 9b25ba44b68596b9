"""Print a receipt: `python -m shop.report` from examples/multi_module."""
import pickle

import jax.numpy as jnp
import numpy as np

from shop.prices import taxed


def main():
    total, blob = taxed(jnp.array([1.0, 2.5, 10.0]), 0.2)
    lines = pickle.loads(blob)
    print(type(lines).__name__, np.asarray(lines, np.float64).round(2).tolist())
    print(f"total {float(total):.2f}")


if __name__ == "__main__":
    main()
