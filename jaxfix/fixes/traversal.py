"""Walks over a LibCST tree that only read it.

A LibCST visit rebuilds every node it passes, and validates the copy, even for a visitor that
changes nothing: about a third of the time of a read-only visit. These walks read each node's fields
instead, in the order LibCST's own visit takes them (source order), so that visitors see the
same calls in the same order.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack
from dataclasses import fields

import libcst as cst
from libcst.metadata import MetadataWrapper

_ORDER: dict[type[cst.CSTNode], tuple[str, ...]] = {}
# Whether a field's value is a node, by the value's type: `isinstance(value, cst.CSTNode)` goes
# through `ABCMeta`'s check, slow for the strings, tuples and `None`s most fields hold.
_IS_NODE: dict[type, bool] = {}


def children(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """`node.children`, in the same order, without LibCST rebuilding `node`."""
    names = _ORDER.get(type(node))
    if names is None:
        names = _ORDER[type(node)] = _field_order(node)
    for name in names:
        value = getattr(node, name)
        kind = type(value)
        if kind is tuple or kind is list:
            for item in value:
                is_node = _IS_NODE.get(type(item))
                if is_node is None:
                    is_node = _IS_NODE[type(item)] = isinstance(item, cst.CSTNode)
                if is_node:
                    yield item
        else:
            is_node = _IS_NODE.get(kind)
            if is_node is None:
                is_node = _IS_NODE[kind] = isinstance(value, cst.CSTNode)
            if is_node:
                yield value


def _field_order(node: cst.CSTNode) -> tuple[str, ...]:
    """The fields of `node`'s type in the order LibCST's visit takes them (once per type)."""
    recorder = _FieldRecorder()
    node._visit_and_replace_children(recorder)
    rest = [f.name for f in fields(node) if f.name not in recorder.names]
    return (*recorder.names, *rest)


class _FieldRecorder(cst.CSTVisitor):
    """Notes the fields a node's visit enters, in order, without going below them."""

    def __init__(self) -> None:
        self.names: list[str] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        return False

    def on_visit_attribute(self, node: cst.CSTNode, attribute: str) -> None:
        if attribute not in self.names:
            self.names.append(attribute)


class ReadOnlyVisitor(cst.CSTVisitor):
    """A visitor that only reads: each node's children are walked with `children` from its
    `on_visit`, which then tells LibCST not to walk them, so LibCST rebuilds nothing.

    Put it first among a visitor's bases. `visit_<Type>`, `leave_<Type>` and a `node.visit(self)`
    inside them work as usual; `visit_<Type>_<attribute>` methods are not called."""

    def on_visit(self, node: cst.CSTNode) -> bool:
        visit = _methods(type(self), type(node))[0]
        if visit is None or visit(self, node) is not False:
            for child in children(node):
                # What `child.visit(self)` does for a visitor, less its two `isinstance` checks
                # through `ABCMeta` (a tenth of the walk).
                self.on_visit(child)
                self.on_leave(child)
        return False

    def on_leave(self, original_node: cst.CSTNode) -> None:
        leave = _methods(type(self), type(original_node))[1]
        if leave is not None:
            leave(self, original_node)


VisitorMethod = Callable[[cst.CSTVisitor, cst.CSTNode], object]
_METHODS: dict[tuple[type, type], tuple[VisitorMethod | None, VisitorMethod | None]] = {}


def _methods(
    visitor: type[cst.CSTVisitor], node: type[cst.CSTNode]
) -> tuple[VisitorMethod | None, VisitorMethod | None]:
    """The `visit_<Type>` and `leave_<Type>` functions of a visitor class for a node type, None
    for LibCST's empty stubs: what `CSTVisitor.on_visit` looks up by a formatted name on every
    node, once per pair of types."""
    found = _METHODS.get((visitor, node))
    if found is None:
        found = _METHODS[visitor, node] = (
            _defined(visitor, f"visit_{node.__name__}"),
            _defined(visitor, f"leave_{node.__name__}"),
        )
    return found


def _defined(visitor: type[cst.CSTVisitor], name: str) -> VisitorMethod | None:
    method = getattr(visitor, name, None)
    return None if method is None or getattr(method, "_is_no_op", False) else method


def visit_batched(wrapper: MetadataWrapper, visitors: Sequence[cst.BatchableCSTVisitor]) -> None:
    """`wrapper.visit_batched(visitors)` for visitors that only read the tree: each node's
    `visit_<Type>` methods, its children's walks, then its `leave_<Type>` methods."""
    methods: _Methods = {}
    for visitor in visitors:
        for name, method in visitor.get_visitors().items():
            methods.setdefault(name, []).append(method)
    if any(name.count("_") > 1 for name in methods):  # `visit_<Type>_<attribute>`: LibCST's
        wrapper.visit_batched(visitors)
        return
    by_type: _ByType = {}
    with ExitStack() as stack:
        for visitor in visitors:
            stack.enter_context(visitor.resolve(wrapper))
        _walk_batched(wrapper.module, methods, by_type)


_Methods = dict[str, list[Callable[[cst.CSTNode], object]]]
_ByType = dict[type[cst.CSTNode], tuple[list[Callable[[cst.CSTNode], object]], ...]]


def _walk_batched(node: cst.CSTNode, methods: _Methods, by_type: _ByType) -> None:
    """`visit_batched`'s walk (a module-level function: a closure calling itself would be a
    reference cycle, holding the visitors and the tree until the cycle collector runs)."""
    found = by_type.get(type(node))
    if found is None:
        kind = type(node).__name__
        found = by_type[type(node)] = (
            methods.get(f"visit_{kind}", []),
            methods.get(f"leave_{kind}", []),
        )
    for method in found[0]:
        method(node)
    for child in children(node):
        _walk_batched(child, methods, by_type)
    for method in found[1]:
        method(node)
