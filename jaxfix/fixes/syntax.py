"""Small LibCST helpers the rules share: a node's source, the calls under a node, the
arguments a sink takes its value from, and the replacement of nodes by others."""

from __future__ import annotations

from collections.abc import Mapping

import libcst as cst

from jaxfix.fixes.fix import Replacement
from jaxfix.fixes.traversal import children
from jaxfix.models.sinks import Payload


def source_of(node: cst.CSTNode) -> str:
    """The source of `node` as LibCST writes it (for messages and comparisons)."""
    return cst.Module([]).code_for_node(node)


def calls_in(node: cst.CSTNode) -> list[cst.Call]:
    """`node` if it is a call, and every call below it, outermost first."""
    found: list[cst.Call] = [node] if isinstance(node, cst.Call) else []
    for child in children(node):
        found.extend(calls_in(child))
    return found


def payload_of(call: cst.Call, payload: Payload) -> list[cst.BaseExpression]:
    """The arguments of `call` that a sink's `payload` names (none when it is not given)."""
    if payload.rest:
        positional = [a.value for a in call.args if a.keyword is None]
        keywords = [a.value for a in call.args if a.keyword is not None]
        return positional[payload.position :] + keywords
    for index, arg in enumerate(call.args):
        if arg.keyword is None and not arg.star and index == payload.position:
            return [arg.value]
        if arg.keyword is not None and arg.keyword.value == payload.keyword:
            return [arg.value]
    return []


class ReplaceNodes(cst.CSTTransformer):
    """Replace nodes (the originals, by identity) with what `replacements` gives them.

    Only the nodes above a replaced one are entered and rebuilt: the rest of the tree stays the
    same objects (a LibCST visit would rebuild and validate every node, most of a fix's time)."""

    def __init__(self, replacements: Mapping[cst.CSTNode, Replacement]) -> None:
        super().__init__()
        self.replacements = replacements
        self._above: set[cst.CSTNode] | None = None  # known at the first node visited

    def on_visit(self, node: cst.CSTNode) -> bool:
        if self._above is None:
            self._above = _above(node, self.replacements)
        return node in self._above

    def on_leave(  # type: ignore[override]
        self, original_node: cst.CSTNode, updated_node: cst.CSTNode
    ) -> Replacement:
        return self.replacements.get(original_node, updated_node)


def _above(root: cst.CSTNode, wanted: Mapping[cst.CSTNode, object]) -> set[cst.CSTNode]:
    """The nodes of `root`'s tree (`root` included) that hold a node of `wanted` below them."""
    found: set[cst.CSTNode] = set()
    path: list[cst.CSTNode] = []
    todo: list[tuple[cst.CSTNode, int]] = [(root, 0)]
    while todo:
        node, depth = todo.pop()
        del path[depth:]
        if node in wanted:
            found.update(path)
        path.append(node)
        todo.extend((child, depth + 1) for child in children(node))
    return found
