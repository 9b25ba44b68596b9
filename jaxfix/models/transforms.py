"""What jax does with the functions handed to it: which arguments are traced, which are static.

A table keyed by fully qualified name. `staged` means the function is traced to a jaxpr (so even
`jnp.zeros(3)` inside it is a tracer), as under `jit`, `scan` or `pmap`; eager transforms such as
`grad` or `vmap` only trace their differentiated or batched inputs.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, replace
from typing import Any


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
    # Leading parameters that receive a framework object, not data (the module of a Flax
    # linen lifted transform's `fn(module, carry, x)`): never traced.
    leading_untraced: int = 0
    # Equinox's `filter_*`: only array leaves are traced, everything else is static. We cannot
    # see types, so a parameter annotated with a Python type (`n: int`) or defaulting to a
    # literal (`n=3`, `name="x"`) counts as static; any other parameter as traced.
    filtered: bool = False
    # Static positions and names a project's wrapper declares once for every function it
    # wraps (`def compiled(fn): return jax.jit(fn, static_argnums=1)`).
    static_positions: tuple[int, ...] = ()
    static_names: tuple[str, ...] = ()


@dataclass(frozen=True)
class Wrapped:
    """What a project's wrapper (`def batched(fn): return jax.vmap(fn, in_axes=(0, None))`)
    does to every function it wraps: the transform it applies, the arguments its call makes
    static or leaves unbatched (concrete either way), by position or name, and those it
    differentiates (`argnums`; None for the transform's default)."""

    transform: str = "jax.jit"
    static_positions: tuple[int, ...] = ()
    static_names: tuple[str, ...] = ()
    argnums: tuple[int, ...] | None = None

    @classmethod
    def from_plain(cls, data: Mapping[str, Any]) -> Wrapped:
        argnums = data["argnums"]
        return cls(
            str(data["transform"]),
            tuple(int(i) for i in data["static_positions"]),
            tuple(str(n) for n in data["static_names"]),
            None if argnums is None else tuple(int(i) for i in argnums),
        )


_JIT = TransformSpec(
    static_argnums_keywords=("static_argnums",),
    static_argnames_keywords=("static_argnames",),
)
_GRAD = TransformSpec(staged=False, argnums_keyword="argnums", default_argnums=(0,))
_EAGER = TransformSpec(staged=False)
_CUSTOM = TransformSpec(
    staged=False,
    static_argnums_keywords=("nondiff_argnums",),
    static_argnames_keywords=("nondiff_argnames",),
)

_EQX_JIT = TransformSpec(filtered=True)
_EQX_GRAD = TransformSpec(staged=False, default_argnums=(0,), filtered=True)
_LINEN = TransformSpec(fun_keywords=("target", "fn"), leading_untraced=1)
_SCAN = TransformSpec(fun_keywords=("f",))
_OPTAX_UPDATE = TransformSpec(fun_positions=(1,), fun_keywords=("update",), staged=False)

# Transforms of the JAX frameworks (Equinox, Flax linen and NNX, Haiku), by their full names.
FRAMEWORK_TRANSFORMS: dict[str, TransformSpec] = {
    "equinox.filter_jit": _EQX_JIT,
    "equinox.filter_pmap": _EQX_JIT,
    "equinox.filter_grad": _EQX_GRAD,
    "equinox.filter_value_and_grad": _EQX_GRAD,
    "equinox.filter_vmap": TransformSpec(staged=False, in_axes_keyword="in_axes", filtered=True),
    "flax.linen.jit": _LINEN,
    "flax.linen.scan": _LINEN,
    "flax.linen.remat": _LINEN,
    "flax.linen.checkpoint": _LINEN,
    "flax.linen.vmap": TransformSpec(staged=False, fun_keywords=("target",), leading_untraced=1),
    "flax.nnx.jit": _JIT,
    "flax.nnx.scan": _SCAN,
    "flax.nnx.remat": TransformSpec(static_argnums_keywords=("static_argnums",)),
    "flax.nnx.vmap": TransformSpec(staged=False, fun_keywords=("f",), in_axes_keyword="in_axes"),
    "flax.nnx.grad": TransformSpec(
        fun_keywords=("f",), staged=False, argnums_keyword="argnums", default_argnums=(0,)
    ),
    "flax.nnx.value_and_grad": TransformSpec(
        fun_keywords=("f",), staged=False, argnums_keyword="argnums", default_argnums=(0,)
    ),
    # A function given to `hk.transform` runs only through `.init` / `.apply`, which are meant
    # to be jitted: its inputs are traced whenever it is, so it is traced code by design. Not
    # staged: un-jitted, a constant it makes stays concrete.
    "haiku.transform": TransformSpec(fun_keywords=("f",), staged=False),
    "haiku.transform_with_state": TransformSpec(fun_keywords=("f",), staged=False),
    "haiku.scan": _SCAN,
    "jax.experimental.checkify.checkify": TransformSpec(fun_keywords=("f",)),
    # An Optax transformation's `update` runs inside the jitted train step that applies it:
    # traced by design, like a linen method. Its `init` usually runs eagerly on the params.
    "optax.GradientTransformation": _OPTAX_UPDATE,
    "optax.GradientTransformationExtraArgs": _OPTAX_UPDATE,
    "optax.stateless": TransformSpec(fun_keywords=("f",), staged=False),
    "optax.stateless_with_tree_map": TransformSpec(fun_keywords=("f",), staged=False),
}

JIT = "jax.jit"  # the transform some fixes require (a function's only reason to be traced)
TRANSFORMS: dict[str, TransformSpec] = {
    JIT: _JIT,
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
    **FRAMEWORK_TRANSFORMS,
}

# Transforms whose result takes the parameters of the function it is given, in order
# (`solve = jax.jit(run)`: `solve(a, b)` gives `run` `a` and `b`).
SAME_PARAMETERS = frozenset(
    {
        "jax.jit",
        "jax.pjit",
        "jax.experimental.pjit.pjit",
        "jax.pmap",
        "jax.vmap",
        "jax.grad",
        "jax.value_and_grad",
        "jax.jacfwd",
        "jax.jacrev",
        "jax.hessian",
        "jax.checkpoint",
        "jax.remat",
        "equinox.filter_jit",
        "equinox.filter_pmap",
        "equinox.filter_grad",
        "equinox.filter_value_and_grad",
        "equinox.filter_vmap",
        "flax.nnx.jit",
        "flax.nnx.grad",
        "flax.nnx.value_and_grad",
        "flax.nnx.vmap",
        "flax.nnx.remat",
    }
)

# Module classes whose methods run only inside `init` / `apply` (Flax linen) or a transformed
# function (Haiku), which are meant to be jitted: their array inputs are traced by design.
TRACED_MODULE_BASES = frozenset({"flax.linen.Module", "haiku.Module"})

# `W(f)` calls `f` with its own arguments: under a trace, `W(f)(x)` traces `f` like `f(x)`.
CALL_WRAPPERS = frozenset({"jax.named_call"})

# Annotations of parameters that hold Python values (static under Equinox's `filter_*`).
PYTHON_TYPES = frozenset(
    {"int", "float", "bool", "str", "bytes", "complex", "type", "Callable", "None"}
)

# Transforms that trace a function only to find shapes: it never runs (`jax.eval_shape`).
ABSTRACT_TRANSFORMS = frozenset({"jax.eval_shape", "jax.make_jaxpr"})

# Transforms that run the function they are given at once and return what it computes (data),
# not a function that runs it later.
RUN_AT_ONCE = frozenset(
    {
        "jax.lax.scan",
        "jax.lax.fori_loop",
        "jax.lax.while_loop",
        "jax.lax.cond",
        "jax.lax.switch",
        "jax.lax.map",
        "jax.lax.associative_scan",
        "jax.jvp",
    }
)

# `f.defjvp` / `f.defvjp` on a function made by these register rules that are traced too.
CUSTOM_DERIVATIVES = frozenset({"jax.custom_jvp", "jax.custom_vjp"})
CUSTOM_RULE_METHODS = frozenset({"defjvp", "defvjp", "defjvps"})

# Functions handed to these run on the host with concrete values: never traced.
HOST_CALLBACKS = frozenset(
    {
        "jax.debug.callback",
        "jax.experimental.io_callback",
        "jax.pure_callback",
        # What the public names re-export (jax's own code and pallas call these).
        "jax._src.callback.io_callback",
        "jax._src.callback.pure_callback",
        "jax._src.debugging.debug_callback",
        "jax.experimental.host_callback.id_tap",
        "jax.experimental.host_callback.call",
    }
)

# What runs a computation over several devices, where JAX refuses ordered effects ("The
# following ordered effects are not supported for more than 1 device"): a module that names
# one of these (or any `jax.sharding` name, or gives `jax.jit` shardings) may run its traced
# functions sharded.
SHARDING = frozenset(
    {
        "jax.pmap",
        "jax.experimental.pjit.pjit",
        "jax.experimental.shard_map.shard_map",
        "jax.shard_map",
        "jax.make_mesh",
        "jax.set_mesh",
        "jax.lax.with_sharding_constraint",
        "jax.experimental.mesh_utils.create_device_mesh",
    }
)
SHARDING_MODULES = ("jax.sharding.",)
SHARDING_KEYWORDS = frozenset({"in_shardings", "out_shardings"})

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
        "builtins.set",  # a set of tracers raises; what it holds is hashable
        "builtins.frozenset",
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
        "jax.numpy.dtype",
        "jax.numpy.promote_types",
        "jax.numpy.can_cast",
        "numpy.shape",
        "numpy.ndim",
        "numpy.size",
    }
)

# Functions that answer about a tree's structure or a value's abstract type, not the values:
# a path's string, a tree's structure (a `PyTreeDef`, hashable), an array's aval (its shape
# and dtype), whatever the leaves are.
STRUCTURE_QUERIES = frozenset(
    {"jax.tree_util.keystr", "jax.tree_util.tree_structure", "jax.tree.structure"}
    | {"jax.typeof", "jax.core.get_aval"}
    | {"jax.tree_util.treedef_children", "jax.tree_util.treedef_is_leaf"}
    | {"jax.tree_util.treedef_tuple", "jax.tree_util.all_leaves"}
)
# Flattens that give `(leaves, treedef)`: the leaves as given, the structure a Python value;
# with their paths (`(path, leaf)` pairs), whose keys are Python values too.
FLATTENS = frozenset({"jax.tree_util.tree_flatten", "jax.tree.flatten"})
FLATTENS_WITH_PATH = frozenset(
    {"jax.tree_util.tree_flatten_with_path", "jax.tree.flatten_with_path"}
)
LEAVES_WITH_PATH = frozenset({"jax.tree_util.tree_leaves_with_path", "jax.tree.leaves_with_path"})

# Bases of pytree classes that declare no field of their own: a class deriving from them holds
# the fields it declares.
FIELDLESS_PYTREE_BASES = frozenset({"flax.struct.PyTreeNode", "equinox.Module", "object"})

# Methods of `str` (a tracer has none): what they return is a Python value.
STRING_METHODS = frozenset(
    {"split", "rsplit", "strip", "lstrip", "rstrip", "lower", "upper", "replace"}
    | {"startswith", "endswith", "partition", "rpartition", "splitlines", "encode"}
)

# Under a staged trace, every array these create is a tracer, even from constants.
STAGED_ARRAY_NAMESPACES = ("jax.numpy.", "jax.lax.", "jax.random.", "jax.nn.", "jax.scipy.")


def with_user_transforms(
    names: Collection[str], wrapped: Collection[tuple[str, Wrapped]] = ()
) -> Mapping[str, TransformSpec]:
    """The transform table plus the project's own wrappers: traced as `jax.jit`, or, for a
    wrapper of the run (`wrapped`, by name), as the transform it applies with its arguments."""
    if not names:
        return TRANSFORMS
    known = dict(wrapped)
    user = {}
    for name in names:
        if name in TRANSFORMS:
            continue
        wrapper = known.get(name)
        if wrapper is None:
            user[name] = _JIT
            continue
        base = TRANSFORMS.get(wrapper.transform, _JIT)
        argnums = base.default_argnums if wrapper.argnums is None else wrapper.argnums
        user[name] = replace(
            base,
            static_positions=wrapper.static_positions,
            static_names=wrapper.static_names,
            default_argnums=argnums,
        )
    return {**TRANSFORMS, **user}
