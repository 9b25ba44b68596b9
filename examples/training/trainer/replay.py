"""A replay buffer of serialized batches."""
import pickle

BUFFER = []


def push(batch):
    BUFFER.append(pickle.dumps(batch))
