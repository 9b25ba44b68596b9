"""Latin-1 bytes without a coding line."""
import jax

NAME = "café"
