"""Small LibCST helpers the rules and fixes share: a node's source, the calls under a node, the
arguments a sink takes its value from, the names a function binds or reads."""

from __future__ import annotations

from collections.abc import Collection, Iterator

import libcst as cst

from jaxfix.fixes.traversal import children
from jaxfix.models.sinks import Payload

FunctionNode = cst.FunctionDef | cst.Lambda


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


def own_names(function: FunctionNode) -> set[str]:
    """The parameters of `function` and the names its body binds by assignment or `for`."""
    params = function.params
    every = [*params.posonly_params, *params.params, *params.kwonly_params]
    every += [p for p in (params.star_arg, params.star_kwarg) if isinstance(p, cst.Param)]
    names = {p.name.value for p in every}
    for node in descendants(function.body):
        if isinstance(node, cst.AssignTarget | cst.AugAssign | cst.AnnAssign | cst.For):
            names.update(n.value for n in descendants(node.target) if isinstance(n, cst.Name))
    return names


def descendants(node: cst.CSTNode, skip: Collection[cst.CSTNode] = ()) -> list[cst.CSTNode]:
    """`node` and every node under it, less those under `skip`."""
    found, todo = [], [node]
    while todo:
        current = todo.pop()
        if any(current is s for s in skip):
            continue
        found.append(current)
        todo.extend(children(current))
    return found


def first_parameter(function: cst.FunctionDef) -> str | None:
    params = [*function.params.posonly_params, *function.params.params]
    return params[0].name.value if params else None


def parameters(function: FunctionNode) -> Iterator[cst.Param]:
    """`function`'s parameters in order, `*args` and `**kwargs` included."""
    p = function.params
    yield from p.posonly_params
    yield from p.params
    if isinstance(p.star_arg, cst.Param):
        yield p.star_arg
    yield from p.kwonly_params
    if p.star_kwarg is not None:
        yield p.star_kwarg


def parameter_names(function: FunctionNode) -> set[str]:
    """The names of `function`'s parameters, `*args` and `**kwargs` included."""
    return {param.name.value for param in parameters(function)}


def names_read(node: cst.CSTNode) -> Iterator[cst.Name]:
    """Every Name under `node` that is not an attribute name, a keyword or a parameter."""
    if isinstance(node, cst.Name):
        yield node
        return
    if isinstance(node, cst.Attribute):
        yield from names_read(node.value)
        return
    for child in children(node):
        if isinstance(child, cst.Arg):
            yield from names_read(child.value)
        elif not isinstance(child, cst.Param):
            yield from names_read(child)
