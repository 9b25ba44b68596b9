"""Walking CPython's syntax tree quickly."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

# The grammar's types of fields that never hold a node (`ast.Name.__doc__` is its signature:
# `Name(identifier id, expr_context ctx)`); expression contexts are leaves no analysis reads.
LEAF_TYPES = frozenset({"identifier", "string", "constant", "int", "expr_context"})
_SIGNATURE = re.compile(r"\w+\((?P<fields>.*)\)")
_node_fields: dict[type[ast.AST], tuple[str, ...]] = {}


def children(node: ast.AST) -> Iterator[ast.AST]:
    """Like `ast.iter_child_nodes`, without the leaves no analysis looks at: expression
    contexts (`Load`, `Store`) and constants, about a third of all nodes. Only the fields
    that may hold a node are read (`node_fields`)."""
    fields = _node_fields.get(type(node))
    if fields is None:
        fields = node_fields(type(node))
    for name in fields:
        value = getattr(node, name, None)
        if type(value) is list:
            for item in value:
                if isinstance(item, ast.AST) and type(item) is not ast.Constant:
                    yield item
        elif isinstance(value, ast.AST) and type(value) is not ast.Constant:
            yield value


def node_fields(kind: type[ast.AST]) -> tuple[str, ...]:
    """The fields of a node class that may hold nodes, as the running Python's grammar types
    them (in the class' docstring): not names, strings, constants, numbers nor contexts. Every
    field but `ctx` where the docstring does not read as a signature."""
    fields = tuple(name for name in kind._fields if name != "ctx")
    signature = _SIGNATURE.fullmatch((kind.__doc__ or "").strip())
    if signature is not None:
        declared = [part.split() for part in signature["fields"].split(",")]
        types = {pair[1]: pair[0].rstrip("?*") for pair in declared if len(pair) == 2}
        fields = tuple(name for name in fields if types.get(name) not in LEAF_TYPES)
    _node_fields[kind] = fields
    return fields
