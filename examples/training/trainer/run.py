"""Train three steps, then report: `python -m trainer.run` from examples/training."""
import pickle

import jax.numpy as jnp

from trainer import checkpoints, metrics, replay
from trainer.step import train_step

params = jnp.zeros(2)
for i in range(3):
    params = train_step(params, jnp.array([[1.0, 2.0], [0.5, float(i)]]))
print("losses", metrics.HISTORY)
print("batches", len(replay.BUFFER), pickle.loads(replay.BUFFER[-1]).tolist())
print("checkpoint", [round(v, 4) for v in checkpoints.load("latest").tolist()])
