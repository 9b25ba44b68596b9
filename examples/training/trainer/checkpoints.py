"""Checkpoints: one pickle file per name, in the run's folder."""
import pickle
import tempfile
from pathlib import Path

FOLDER = Path(tempfile.mkdtemp(prefix="trainer-"))


def save(params, name):
    with open(FOLDER / f"{name}.pkl", "wb") as f:
        pickle.dump({"params": params}, f)


def load(name):
    with open(FOLDER / f"{name}.pkl", "rb") as f:
        return pickle.load(f)["params"]
