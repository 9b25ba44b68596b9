"""What the names a module binds by importing denote: `jnp` -> `jax.numpy`, `d` ->
`pickle.dumps`, `from .io import save` -> `pkg.io.save`."""

from __future__ import annotations

import ast
import sys


def import_bindings(
    node: ast.Import | ast.ImportFrom, module: str = "", is_package: bool = False
) -> dict[str, str]:
    """The names one import binds, to their full names."""
    names: dict[str, str] = {}
    if isinstance(node, ast.Import):
        for alias in node.names:
            if alias.asname:
                names[alias.asname] = alias.name
            else:
                top = alias.name.split(".", 1)[0]
                names[top] = top
        return names
    base = absolute_module(node, module, is_package)
    for alias in node.names:
        if alias.name != "*":
            relative = base.endswith(".") or not base
            names[alias.asname or alias.name] = (
                base + alias.name if relative else f"{base}.{alias.name}"
            )
    return names


def absolute_module(node: ast.ImportFrom, module: str, is_package: bool) -> str:
    """The module `from ... import` reads, made absolute against `module`."""
    if not node.level:
        return node.module or ""
    if not module:  # where the file sits is unknown: keep it relative, as LibCST spells it
        return "." * node.level + (node.module or "")
    parts = module.split(".") if module else []
    keep = len(parts) - node.level + (1 if is_package else 0)
    base = ".".join(parts[: max(keep, 0)])
    return f"{base}.{node.module}" if base and node.module else (node.module or base)


def dotted(node: ast.expr) -> list[str] | None:
    """`a.b.c` as `["a", "b", "c"]`; None for anything but names and attributes."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return parts[::-1]


# Imported modules whose attributes are code and constants (`np.save`, `jnp.float32`), not
# state of the program: the standard library's and the common libraries' a traced function
# uses. An attribute of any other module (`state.VALUES` of the project's `pkg.state`) is.
_LIBRARIES = frozenset(sys.stdlib_module_names) | frozenset(
    {
        "jax", "jaxlib", "numpy", "scipy", "flax", "optax", "equinox", "haiku", "chex",
        "orbax", "numpyro", "distrax", "einops", "jaxtyping", "ml_dtypes", "torch",
        "tensorflow", "pandas", "joblib", "cloudpickle", "dill", "msgpack", "h5py", "zarr",
        "absl", "tqdm", "wandb", "tensorboardX", "diskcache", "cachetools", "yaml", "rich",
    }
)  # fmt: skip


def of_the_program(imported: str | None) -> bool:
    """Whether an import (its dotted name) is of a module that is no library's."""
    return imported is not None and imported.split(".")[0] not in _LIBRARIES
