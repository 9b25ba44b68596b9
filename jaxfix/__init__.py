"""jaxfix: find and rewrite JAX code that serializes, caches or leaks traced values."""

__version__ = "0.1.0"
