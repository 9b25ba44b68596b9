# Report: https://github.com/nglaze00/SCoNe_GCN/issues/3
# What the user did: built the trajectory end nodes with jax.numpy (np instead of onp) and used them as keys of a neighbourhood dict
# Raises: TypeError
import jax.numpy as np
import numpy as onp

rng = onp.random.default_rng(0)
num_nodes = 20
nbrhoods_dict = {n: set(rng.choice(num_nodes, size=3, replace=False).tolist()) for n in range(num_nodes)}
paths = rng.integers(0, num_nodes, size=(100, 5))

last_nodes = np.array([path[-1] for path in paths])
n_nbrs = onp.array([len(nbrhoods_dict[n]) for n in last_nodes])
print(n_nbrs.mean())
