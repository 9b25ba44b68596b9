import pickle

import jax
import jax.numpy as jnp
from jax.experimental.shard_map import shard_map
from jax.sharding import Mesh, PartitionSpec as P

mesh = Mesh(jax.devices()[:1], ("x",))


def f(x):
    pickle.dumps(x)
    return x


shard_map(f, mesh=mesh, in_specs=P("x"), out_specs=P("x"))(jnp.ones(2))
