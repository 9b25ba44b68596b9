"""Members of a class whose declared type is a Python value: a property annotated `-> int`,
`-> bool`, `-> str`, `-> tuple[int, ...]`. Reading one gives no tracer, whatever the instance
holds, as a type checker reads `index.n_states` through the declared type of `index`'s class
(an override must keep that type). `float` and `complex` do not count: JAX code gives them to
traced scalars (`def loss(self) -> float`)."""

from __future__ import annotations

import ast

from jaxfix.analysis.summaries import Module, class_lineage, qualified_name

# The Python types whose values a tracer never is.
_SCALARS = frozenset({"int", "bool", "str", "bytes", "NoneType"})
# Generic types whose value holds only what their arguments say (`tuple[int, ...]`).
_HOLDERS = frozenset(
    {"tuple", "list", "set", "frozenset", "dict", "Sequence", "Mapping", "Iterable"}
    | {"Tuple", "List", "Set", "FrozenSet", "Dict", "Optional", "Union", "Literal"}
)


def python_valued_members(name: str, module: Module) -> frozenset[str]:
    """The properties of the module's class `name` (or of its bases in the module) whose
    declared type is a Python value."""
    found: set[str] = set()
    for current in class_lineage(name, module):
        found |= {
            statement.name
            for statement in module.classes[current].body
            if isinstance(statement, ast.FunctionDef)
            and _property(statement)
            and statement.returns is not None
            and python_type(statement.returns, module)
        }
    return frozenset(found)


def python_type(annotation: ast.expr, module: Module) -> bool:
    """Whether `annotation` names only Python values (`int`, `str | None`, `tuple[int, ...]`,
    `Literal["a"]`)."""
    if isinstance(annotation, ast.Constant):
        if isinstance(annotation.value, str):  # `-> "int"`
            try:
                parsed = ast.parse(annotation.value, mode="eval").body
            except SyntaxError:
                return False
            return python_type(parsed, module)
        return annotation.value is None or annotation.value is Ellipsis
    if isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):
        return python_type(annotation.left, module) and python_type(annotation.right, module)
    if isinstance(annotation, ast.Subscript):
        holder = qualified_name(annotation.value, module).rsplit(".", 1)[-1]
        if holder == "Literal":
            return True
        arguments = annotation.slice
        elements = arguments.elts if isinstance(arguments, ast.Tuple) else [arguments]
        return holder in _HOLDERS and all(python_type(e, module) for e in elements)
    return qualified_name(annotation, module).rsplit(".", 1)[-1] in _SCALARS


def _property(function: ast.FunctionDef) -> bool:
    """Whether `function` is decorated `@property` or `@functools.cached_property`."""
    return any(
        (isinstance(d, ast.Name) and d.id in ("property", "cached_property"))
        or (isinstance(d, ast.Attribute) and d.attr == "cached_property")
        for d in function.decorator_list
    )
