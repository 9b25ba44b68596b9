"""What jax does with the functions handed to it: which arguments are traced, which are static.

A table keyed by fully qualified name. `staged` means the function is traced to a jaxpr (so even
`jnp.zeros(3)` inside it is a tracer), as under `jit`, `scan` or `pmap`; eager transforms such as
`grad` or `vmap` only trace their differentiated or batched inputs.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class TransformSpec:
    """How one transform receives its callables and declares static arguments."""

    fun_positions: tuple[int, ...] = (0,)
    fun_keywords: tuple[str, ...] = ("fun",)
    staged: bool = True
    # Keywords naming static positions / names, as jax spells them for this transform.
    static_argnums_keywords: tuple[str, ...] = ()
    static_argnames_keywords: tuple[str, ...] = ()
    # Keyword naming the traced positions, and its default (grad-like transforms).
    argnums_keyword: str | None = None
    default_argnums: tuple[int, ...] = ()
    # A keyword whose literal tuple marks un-batched (concrete) positions with None (vmap).
    in_axes_keyword: str | None = None
    # The callables come as a list or tuple (lax.switch branches).
    fun_sequence: bool = False


_JIT = TransformSpec(
    static_argnums_keywords=("static_argnums",),
    static_argnames_keywords=("static_argnames",),
)
_GRAD = TransformSpec(staged=False, argnums_keyword="argnums", default_argnums=(0,))
_EAGER = TransformSpec(staged=False)
_CUSTOM = TransformSpec(staged=False, static_argnums_keywords=("nondiff_argnums",))

TRANSFORMS: dict[str, TransformSpec] = {
    "jax.jit": _JIT,
    "jax.pjit": _JIT,
    "jax.experimental.pjit.pjit": _JIT,
    "jax.pmap": TransformSpec(static_argnums_keywords=("static_broadcasted_argnums",)),
    "jax.vmap": TransformSpec(staged=False, in_axes_keyword="in_axes"),
    "jax.grad": _GRAD,
    "jax.value_and_grad": _GRAD,
    "jax.jacfwd": _GRAD,
    "jax.jacrev": _GRAD,
    "jax.hessian": _GRAD,
    "jax.checkpoint": TransformSpec(static_argnums_keywords=("static_argnums",)),
    "jax.remat": TransformSpec(static_argnums_keywords=("static_argnums",)),
    "jax.custom_jvp": _CUSTOM,
    "jax.custom_vjp": _CUSTOM,
    "jax.shard_map": TransformSpec(fun_keywords=("f",)),
    "jax.experimental.shard_map.shard_map": TransformSpec(fun_keywords=("f",)),
    "jax.eval_shape": TransformSpec(),
    "jax.make_jaxpr": TransformSpec(static_argnums_keywords=("static_argnums",)),
    "jax.vjp": _EAGER,
    "jax.jvp": _EAGER,
    "jax.linearize": _EAGER,
    "jax.lax.scan": TransformSpec(fun_keywords=("f",)),
    "jax.lax.fori_loop": TransformSpec(fun_positions=(2,), fun_keywords=("body_fun",)),
    "jax.lax.while_loop": TransformSpec(
        fun_positions=(0, 1), fun_keywords=("cond_fun", "body_fun")
    ),
    "jax.lax.cond": TransformSpec(fun_positions=(1, 2), fun_keywords=("true_fun", "false_fun")),
    "jax.lax.switch": TransformSpec(
        fun_positions=(1,), fun_keywords=("branches",), fun_sequence=True
    ),
    "jax.lax.map": TransformSpec(fun_keywords=("f",)),
}

# `f.defjvp` / `f.defvjp` on a function made by these register rules that are traced too.
CUSTOM_DERIVATIVES = frozenset({"jax.custom_jvp", "jax.custom_vjp"})
CUSTOM_RULE_METHODS = frozenset({"defjvp", "defvjp", "defjvps"})

# Functions handed to these run on the host with concrete values: never traced.
HOST_CALLBACKS = frozenset(
    {
        "jax.debug.callback",
        "jax.experimental.io_callback",
        "jax.pure_callback",
        "jax.experimental.host_callback.id_tap",
        "jax.experimental.host_callback.call",
    }
)

# Apply a function to every leaf: its parameters are traced when a tree argument is.
TREE_MAPS = frozenset(
    {"jax.tree_util.tree_map", "jax.tree.map", "jax.tree_map", "jax.tree_util.tree_map_with_path"}
)

PARTIAL = "functools.partial"

# Attributes and queries of a traced array that are static Python values.
STATIC_ATTRIBUTES = frozenset({"shape", "dtype", "ndim", "size", "sharding", "aval", "weak_type"})
STATIC_QUERIES = frozenset(
    {
        "builtins.len",
        "builtins.isinstance",
        "builtins.type",
        "builtins.id",
        "jax.numpy.shape",
        "jax.numpy.ndim",
        "jax.numpy.size",
        "jax.numpy.result_type",
        "jax.numpy.iinfo",
        "jax.numpy.finfo",
        "jax.numpy.issubdtype",
        "jax.numpy.isdtype",
        "numpy.shape",
        "numpy.ndim",
        "numpy.size",
    }
)

# Under a staged trace, every array these create is a tracer, even from constants.
STAGED_ARRAY_NAMESPACES = ("jax.numpy.", "jax.lax.", "jax.random.", "jax.nn.", "jax.scipy.")


def with_user_transforms(names: Collection[str]) -> Mapping[str, TransformSpec]:
    """The transform table plus the project's own jit-like wrappers (traced as `jax.jit`)."""
    if not names:
        return TRANSFORMS
    return {**TRANSFORMS, **{name: _JIT for name in names if name not in TRANSFORMS}}
