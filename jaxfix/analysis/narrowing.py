"""What a test of a value's class tells of it (`isinstance(x, C)`, `case C():`): where it holds,
`x` is an instance of `C`, and when `C` is no array type, no tracer. It is a Python value (`int`,
`str`), one of JAX's own objects (`jax.core.Var`, `jaxfix.models.jax_objects`), or an instance of
a class of the module: its methods' summaries say what they return (a field of a traced value is
traced), and its fields are what the tested value's were. A name imported from elsewhere may be
an alias of an array type (`Array = jax.Array`): it tells nothing, nor does `object`."""

from __future__ import annotations

import ast
import functools
from collections.abc import Callable

from jaxfix.analysis import values as v
from jaxfix.analysis.calls import PYTHON_TYPE_NAMES
from jaxfix.analysis.names import dotted
from jaxfix.analysis.summaries import TRACER_TEST, Module, qualified_name
from jaxfix.analysis.values import INSTANCE, JAX_OBJECT, STATIC, Kind, Value, class_named
from jaxfix.models.jax_objects import ARRAY_TYPES, OBJECT_CLASSES, PLAIN_METACLASSES


def narrowed(
    types: ast.expr, subject: Value, module: Module, lookup: Callable[[str], Value]
) -> Value | None:
    """What `subject` holds where it is an instance of `types` (a class or a tuple of classes,
    as `isinstance` takes them); None when one of them may be an array type. `lookup` gives
    what a name denotes where the test stands."""
    elements = types.elts if isinstance(types, ast.Tuple) else [types]
    found = [_instance(element, subject, module, lookup) for element in elements]
    if not found or any(value is None for value in found):
        return None
    return functools.reduce(v.join, (value for value in found if value is not None))


def _instance(
    node: ast.expr, subject: Value, module: Module, lookup: Callable[[str], Value]
) -> Value | None:
    parts = dotted(node)
    if parts is None:
        return None
    if parts[-1] in PYTHON_TYPE_NAMES:
        return STATIC
    if qualified_name(node, module) in OBJECT_CLASSES:
        return JAX_OBJECT
    if not isinstance(node, ast.Name) or class_named(lookup(node.id)) != node.id:
        return None
    if may_be_array_class(node.id, module):
        return None
    # Not a tracer itself; what it was traced on rides along, for its fields and methods.
    sources = v.sources_of([subject])
    kind = Kind.STATIC if subject.kind is Kind.STATIC and not sources else Kind.UNKNOWN
    return Value(kind, sources, qualified=INSTANCE + node.id)


def may_be_array_class(name: str, module: Module) -> bool:
    """Whether an array may be an instance of the module's class `name`: it derives (through
    the module's classes) from an array or tracer type or a `Protocol`, its metaclass may
    answer `isinstance` as it likes, or the module registers a virtual subclass of it
    (`Base.register(jax.Array)`)."""
    seen: set[str] = set()
    work = [name]
    while work:
        current = work.pop()
        cls = module.classes.get(current)
        if cls is None or _registers(current, module):
            return True
        seen.add(current)
        for keyword in cls.keywords:
            metaclass = qualified_name(keyword.value, module)
            if keyword.arg == "metaclass" and metaclass not in PLAIN_METACLASSES:
                return True
        for base in cls.bases:
            head = base.value if isinstance(base, ast.Subscript) else base  # `Generic[T]`
            own = isinstance(head, ast.Name) and head.id not in module.imports
            if own and isinstance(head, ast.Name) and head.id in module.classes:
                if head.id not in seen:
                    work.append(head.id)
                continue
            full = qualified_name(head, module)
            if full in ARRAY_TYPES or TRACER_TEST.search(full):
                return True
    return False


def _registers(name: str, module: Module) -> bool:
    """Whether a top-level statement of the module calls `name.register(...)` (an ABC's
    virtual subclass, which `isinstance` accepts)."""
    for statement in module.tree.body:
        call = statement.value if isinstance(statement, ast.Expr) else None
        if (
            isinstance(call, ast.Call)
            and isinstance(call.func, ast.Attribute)
            and call.func.attr == "register"
            and isinstance(call.func.value, ast.Name)
            and call.func.value.id == name
        ):
            return True
    return False
