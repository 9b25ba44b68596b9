"""Where a value ends up in what a function returns: `return v`, `return a, v`,
`return {"k": v}`, or through a name bound once and read only there (`b = v; return b`).

JF107 moves serializations found this way out of the traced function; JF101 leaves them to it.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst
from libcst.metadata import Assignment

from jaxfix.fixes.tracing import TracedAnalysis

# Serializers that return the bytes (or text) they make, with the keyword of their payload.
DUMPS = {
    "pickle.dumps": "obj",
    "cloudpickle.dumps": "obj",
    "dill.dumps": "obj",
    "marshal.dumps": "value",
    "json.dumps": "obj",
}
# Where in the returned value: the whole of it, a tuple element, or a dict item's key.
Part = None | int | str


@dataclass(frozen=True)
class Returned:
    statement: cst.Return
    part: Part


def returned(analysis: TracedAnalysis, value: cst.BaseExpression) -> Returned | None:
    """Where `value` sits in a return statement of the function holding it, if it does."""
    node: cst.CSTNode = value
    parent = analysis.parent(node)
    if isinstance(parent, cst.Assign) and parent.value is value:
        read = _only_reader(analysis, parent)
        if read is None:
            return None
        node, parent = read, analysis.parent(read)
    if isinstance(parent, cst.Return):
        return Returned(parent, None)
    holder = analysis.parent(parent) if parent is not None else None
    statement = analysis.parent(holder) if holder is not None else None
    if not isinstance(statement, cst.Return):
        return None
    if isinstance(parent, cst.Element) and isinstance(holder, cst.Tuple):
        return Returned(statement, list(holder.elements).index(parent))
    if (
        isinstance(parent, cst.DictElement)
        and isinstance(holder, cst.Dict)
        and parent.value is node
        and isinstance(parent.key, cst.SimpleString)
    ):
        key = parent.key.evaluated_value
        return Returned(statement, key) if isinstance(key, str) else None
    return None


def _only_reader(analysis: TracedAnalysis, assign: cst.Assign) -> cst.Name | None:
    """For `b = value` in a function, the one place `b` is read, when it is its only binding."""
    if len(assign.targets) != 1 or not isinstance(assign.targets[0].target, cst.Name):
        return None
    target = assign.targets[0].target
    scope = analysis.scope_of(target)
    if scope is None or analysis.owner_function(assign) is None:
        return None
    bindings = [a for a in scope.assignments[target.value] if isinstance(a, Assignment)]
    if len(bindings) != 1 or bindings[0].node is not target:
        return None
    readers = [access.node for access in bindings[0].references]
    if len(readers) != 1 or not isinstance(readers[0], cst.Name):
        return None
    return readers[0]
