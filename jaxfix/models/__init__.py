"""What jaxfix knows and reports, in plain values: the sink and transform tables (read without
importing what they describe: the static tool never imports jax, NumPy or SciPy), findings and
their text edits, the parts of a file an analysis needs."""
