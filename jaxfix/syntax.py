"""Small LibCST helpers the rules share: a node's source, the calls under a node, the
arguments a sink takes its value from, and the replacement of nodes by others."""

from __future__ import annotations

from collections.abc import Mapping

import libcst as cst

from jaxfix.models.sinks import Payload
from jaxfix.rule import Replacement
from jaxfix.traversal import children


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
    """Replace nodes (the originals, by identity) with what `replacements` gives them."""

    def __init__(self, replacements: Mapping[cst.CSTNode, Replacement]) -> None:
        super().__init__()
        self.replacements = replacements

    def on_leave(  # type: ignore[override]
        self, original_node: cst.CSTNode, updated_node: cst.CSTNode
    ) -> Replacement:
        return self.replacements.get(original_node, updated_node)
