"""Walking CPython's syntax tree quickly."""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterator
from typing import cast

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
    fields = tuple(name for name, _ in _typed_fields(kind))
    _node_fields[kind] = fields
    return fields


def _typed_fields(kind: type[ast.AST]) -> list[tuple[str, str | None]]:
    """`node_fields`, each with its type as the grammar writes it (`expr*`, `expr?`), or None
    where the docstring does not read as a signature."""
    types: dict[str, str] = {}
    signature = _SIGNATURE.fullmatch((kind.__doc__ or "").strip())
    if signature is not None:
        declared = [part.split() for part in signature["fields"].split(",")]
        types = {pair[1]: pair[0] for pair in declared if len(pair) == 2}
    return [
        (name, types.get(name))
        for name in kind._fields
        if name != "ctx" and types.get(name, "").rstrip("?*") not in LEAF_TYPES
    ]


Push = Callable[[ast.AST], object]
Pusher = Callable[[ast.AST, Push], None]


class _Pushers(dict[type[ast.AST], Pusher]):
    """Each node class' `push_children`, made on first use (`_pusher`)."""

    def __missing__(self, kind: type[ast.AST]) -> Pusher:
        pusher = self[kind] = _pusher(kind)
        return pusher


# For a walker's loop: `PUSHERS[type(node)](node, push)` is `push_children(node, push)`.
PUSHERS: dict[type[ast.AST], Pusher] = _Pushers()


def push_children(node: ast.AST, push: Push) -> None:
    """`push` each of `children(node)`, last first: a stack walker (`work.append`) then pops
    them in source order. Twice as fast as extending the stack with the reversed children:
    each node class gets a function of its own that reads its fields by name (`_pusher`)."""
    PUSHERS[type(node)](node, push)


def _pusher(kind: type[ast.AST]) -> Pusher:
    """The source of `push_children` for nodes of `kind`, compiled (as `dataclasses` builds
    its methods): a sequence field (`expr*`) may hold None (`Dict.keys`), an optional one
    (`expr?`) None, and a field of no known type anything."""
    lines = ["def push(node, push):"]
    for name, declared in reversed(_typed_fields(kind)):
        if declared is None:
            lines += [
                f"    value = getattr(node, {name!r}, None)",
                "    if type(value) is list:",
                "        for item in reversed(value):",
                "            if isinstance(item, AST) and type(item) is not Constant:",
                "                push(item)",
                "    elif isinstance(value, AST) and type(value) is not Constant:",
                "        push(value)",
            ]
        elif declared.endswith("*"):
            lines += [
                f"    for item in reversed(node.{name}):",
                "        if item is not None and type(item) is not Constant:",
                "            push(item)",
            ]
        else:
            lines += [
                f"    value = node.{name}",
                "    if value is not None and type(value) is not Constant:",
                "        push(value)",
            ]
    namespace: dict[str, object] = {"AST": ast.AST, "Constant": ast.Constant}
    exec("\n".join([*lines, "    return None"]), namespace)
    return cast(Pusher, namespace["push"])
