"""Walking CPython's syntax tree quickly."""

from __future__ import annotations

import ast
from collections.abc import Iterator


def children(node: ast.AST) -> Iterator[ast.AST]:
    """Like `ast.iter_child_nodes`, without the leaves no analysis looks at: expression
    contexts (`Load`, `Store`) and constants, about a third of all nodes."""
    for name in node._fields:
        if name == "ctx":
            continue
        value = getattr(node, name, None)
        if type(value) is list:
            for item in value:
                if isinstance(item, ast.AST) and type(item) is not ast.Constant:
                    yield item
        elif isinstance(value, ast.AST) and type(value) is not ast.Constant:
            yield value
