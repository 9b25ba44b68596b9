"""JAX's own objects that are never arrays: jaxprs and their parts (equations, variables,
literals, parameters), tree definitions, shape structs and abstract values, shardings and meshes,
primitives. Code that walks them (a jaxpr interpreter whose environment is keyed by
`eqn.invars`, a cache keyed by a treedef) hashes and converts Python objects, not tracers, in
whatever function it runs. By full name, as imports resolve them; the analysis reads these rows
(`jaxfix.analysis.expressions`) and never imports jax."""

from __future__ import annotations

# The modules that define the jaxpr's classes, under their public and private names.
_CORE_MODULES = ("jax.core", "jax.extend.core", "jax._src.core")
_CORE_CLASSES = (
    "Var",
    "Literal",
    "DropVar",
    "Jaxpr",
    "ClosedJaxpr",
    "JaxprEqn",
    "Primitive",
    "ShapedArray",
    "AbstractValue",
)
_SHARDING_CLASSES = (
    "Mesh",
    "AbstractMesh",
    "NamedSharding",
    "PartitionSpec",
    "PositionalSharding",
    "SingleDeviceSharding",
    "Sharding",
)
# The entries of a key path (`tree_flatten_with_path`).
_KEY_CLASSES = ("GetAttrKey", "DictKey", "SequenceKey", "FlattenedIndexKey")

# Classes whose instances are such objects: `isinstance(v, jax.core.Var)` narrows `v` to one.
OBJECT_CLASSES = frozenset(
    {f"{module}.{name}" for module in _CORE_MODULES for name in _CORE_CLASSES}
    | {f"jax.sharding.{name}" for name in _SHARDING_CLASSES}
    | {"jax.ShapeDtypeStruct", "jax.tree_util.PyTreeDef", "jax.extend.core.primitives.Primitive"}
    | {f"jax.tree_util.{name}" for name in _KEY_CLASSES}
)

# Calls that make such an object (constructors are in `OBJECT_CLASSES`).
OBJECT_MAKERS = frozenset(
    {"jax.tree_util.tree_structure", "jax.tree.structure", "jax.make_mesh"}
    | {"jax.sharding.get_abstract_mesh"}
)

# A flatten's structure (`leaves, treedef = jax.tree_util.tree_flatten(x)`) is one of these
# objects too: `FLATTENS` in `jaxfix.models.transforms`.

# Transforms whose transformed function returns such objects when called: `jax.make_jaxpr(f)(x)`
# is a closed jaxpr, whatever `x` holds; and those that return them at once: `jax.eval_shape(f,
# x)` gives `ShapeDtypeStruct`s.
OBJECT_TRANSFORMS = frozenset({"jax.make_jaxpr"})
OBJECT_RESULTS = frozenset({"jax.eval_shape"})

# Attributes only the jaxpr's objects have (an array has none of them): whatever holds one is
# such an object (`jaxpr.eqns`, `eqn.invars`), and so is the attribute.
OBJECT_ATTRIBUTES = frozenset({"eqns", "invars", "outvars", "constvars"})

# Attributes of such objects that hold arrays: a closed jaxpr's constants, a literal's value.
ARRAY_VALUED_ATTRIBUTES = frozenset({"consts", "literals", "val"})

# Classes an array or a tracer may be an instance of, besides `TRACER_TEST`'s: a class of the
# run deriving from one (or a `Protocol`, which `isinstance` checks by attributes) may hold one.
ARRAY_TYPES = frozenset(
    {"jax.Array", "jax.numpy.ndarray", "numpy.ndarray", "numpy.generic", "numpy.number"}
    | {"jax._src.basearray.Array", "typing.Protocol", "typing_extensions.Protocol"}
)
# Metaclasses that leave `isinstance` as it is (another may define `__instancecheck__`).
PLAIN_METACLASSES = frozenset({"abc.ABCMeta", "type"})
