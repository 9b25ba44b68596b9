"""The proofs of the shipped rewrites: the fixture cases, the runner that executes them
under jax (callbacks deferred as on an accelerator) and `jaxfix verify`."""
