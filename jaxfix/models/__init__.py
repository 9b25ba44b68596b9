"""Sink models as data: tables generated from the libraries they describe, read without
importing them (the static tool never imports jax, NumPy or SciPy)."""
