"""Small LibCST helpers the rules share: a node's source, and the calls under a node."""

from __future__ import annotations

import libcst as cst


def source_of(node: cst.CSTNode) -> str:
    """The source of `node` as LibCST writes it (for messages and comparisons)."""
    return cst.Module([]).code_for_node(node)


def calls_in(node: cst.CSTNode) -> list[cst.Call]:
    """`node` if it is a call, and every call below it, outermost first."""
    found: list[cst.Call] = [node] if isinstance(node, cst.Call) else []
    for child in node.children:
        found.extend(calls_in(child))
    return found
