"""Text that traced code writes to a file (`log.write("loss " + str(loss))`).

The file gets the tracer's name, once, at tracing. JF101 reports the write; JF104, which
reports the text made from a tracer (`str(loss)`, `"{}".format(loss)`), leaves to it the text
that goes straight into such a write, so that one bug is one finding.
"""

from __future__ import annotations

from collections.abc import Callable, Collection

import libcst as cst

from jaxfix.fixes.tracing import TracedAnalysis

# What opens a text file, and its methods that write the text they are given.
TEXT_FILES = frozenset({"builtins.open", "io.open"})
FILE_WRITERS = frozenset({"write", "writelines"})


def opened_in_view(traced: TracedAnalysis, file: cst.BaseExpression) -> bool:
    """A file that traced code opens (`with open(p) as f:`, `open(p).write(...)`), that a
    `with open(p) as f:` of a function around the traced one opens, or that one top-level
    `LOG = open(p)` opens: where the first pass looks for writes."""
    if isinstance(file, cst.Call):
        return True
    bindings = traced.assignments(file) if isinstance(file, cst.Name) else []
    for binding in bindings:
        target = traced.parent(binding.node)
        binder = traced.parent(target) if target is not None else None
        if isinstance(binder, cst.WithItem) and isinstance(binder.item, cst.Call):
            continue
        if not isinstance(binder, cst.Assign):
            return False
        at_top = len(bindings) == 1 and traced.at_top_level(binder)
        if not (traced.context_of(binder.value) or at_top):
            return False
    return bool(bindings)


def written_as_text(
    traced: TracedAnalysis,
    qualified_names: Callable[[cst.CSTNode], Collection[str]],
    text: cst.BaseExpression,
) -> bool:
    """Whether `text` is what a write to a text file in view gets, alone or joined with `+` or
    `%` to other text (`log.write("loss " + str(loss))`)."""
    node: cst.CSTNode = text
    parent = traced.parent(node)
    while isinstance(parent, cst.BinaryOperation):
        node, parent = parent, traced.parent(parent)
    if not isinstance(parent, cst.Arg) or parent.keyword is not None or parent.star:
        return False
    call = traced.parent(parent)
    if not isinstance(call, cst.Call) or not call.args or call.args[0] is not parent:
        return False
    func = call.func
    if not isinstance(func, cst.Attribute) or func.attr.value not in FILE_WRITERS:
        return False
    file = func.value
    if isinstance(file, cst.Call):
        opened = not TEXT_FILES.isdisjoint(qualified_names(file.func))
    else:
        opened = isinstance(file, cst.Name) and traced.is_assigned_from(file, TEXT_FILES)
    return opened and opened_in_view(traced, file)
