"""A tiny JAX training package: an MLP classifier, its training loop and metrics."""
from trainer import data, metrics, model, train

__all__ = ["data", "metrics", "model", "train"]
