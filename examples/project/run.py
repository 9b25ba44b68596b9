"""Train the tiny MLP on random data for a few steps: `python run.py`."""
import os
import pickle
import tempfile

import jax
import numpy as np

from trainer import data, metrics, model, train


def main():
    path = os.path.join(tempfile.gettempdir(), "trainer-dataset.pkl")
    data.save_dataset(path, *data.make_dataset(seed=0))
    x, y = data.load_dataset(path)
    params = model.init_params(jax.random.key(0))

    params, loss = train.train_step(params, x[:16], y[:16])
    jax.effects_barrier()
    with open(train.CHECKPOINT, "rb") as f:
        saved = pickle.load(f)
    print(f"step 0: loss={float(loss):.3f}, checkpointed {sorted(saved)}")

    xs, ys = data.batches(x, y, batch_size=16)
    for epoch in range(3):
        params, losses = train.run_epoch(params, xs, ys)
    jax.effects_barrier()
    history = [float(pickle.loads(b)) for b in train.LOSS_HISTORY]
    print(f"{len(history)} scan steps, last loss {history[-1]:.3f} ({float(losses[-1]):.3f})")

    metrics.evaluate(params, x, y)
    jax.effects_barrier()
    print("predictions:", np.asarray(model.predict(params, x[:8])).tolist())

    try:  # no automatic fix: return the arrays, pickle jax.device_get(...) on the host
        train.export_params(params)
    except Exception as e:
        print("export_params failed:", type(e).__name__)


if __name__ == "__main__":
    main()
