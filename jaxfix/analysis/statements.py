"""Statements of CPython's tree as host code runs them: what runs when a statement starts, the
statements inside it, and the code that runs where it stands (not in nested definitions)."""

from __future__ import annotations

import ast
from collections.abc import Collection, Iterable, Iterator, Sequence

FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
DEFINITIONS = (*FUNCTIONS, ast.ClassDef)
_LATER = (*DEFINITIONS, ast.Lambda)  # code that runs when called, not where it stands


def header(statement: ast.stmt) -> list[ast.AST]:
    """What runs when `statement` starts (all of a simple statement; a compound statement's
    test, iterable, context managers or subject; a definition's decorators and defaults)."""
    if isinstance(statement, ast.If | ast.While):
        return [statement.test]
    if isinstance(statement, ast.For | ast.AsyncFor):
        return [statement.target, statement.iter]
    if isinstance(statement, ast.With | ast.AsyncWith):
        return list(statement.items)
    if isinstance(statement, ast.Match):
        return [statement.subject]
    if isinstance(statement, ast.Try | ast.TryStar):
        return []
    if isinstance(statement, FUNCTIONS):
        args = statement.args
        return [*statement.decorator_list, *args.defaults, *(d for d in args.kw_defaults if d)]
    if isinstance(statement, ast.ClassDef):
        return [*statement.decorator_list, *statement.bases, *statement.keywords]
    if isinstance(statement, ast.Global | ast.Nonlocal | ast.Import | ast.ImportFrom):
        return []
    return [statement]


def branches(statement: ast.stmt) -> list[list[ast.stmt]]:
    """The statement lists of an `if`, `with` or `match` (for `if`, the `else` too)."""
    if isinstance(statement, ast.If):
        return [statement.body, statement.orelse]
    if isinstance(statement, ast.With | ast.AsyncWith):
        return [statement.body]
    if isinstance(statement, ast.Match):
        return [case.body for case in statement.cases]
    return []


def inner_statements(statement: ast.stmt) -> list[ast.stmt]:
    inner: list[ast.stmt] = []
    for name in ("body", "orelse", "finalbody"):
        value = getattr(statement, name, None)
        if isinstance(value, list):
            inner.extend(s for s in value if isinstance(s, ast.stmt))
    for handler in getattr(statement, "handlers", ()):
        inner.extend(handler.body)
    for case in getattr(statement, "cases", ()):
        inner.extend(case.body)
    return inner


def walk_statements(statements: Sequence[ast.stmt]) -> Iterator[ast.AST]:
    """Every node of `statements`, nested statements too, not inside definitions."""
    for statement in statements:
        if isinstance(statement, DEFINITIONS):
            continue
        yield from walk_code(header(statement))
        yield from walk_statements(inner_statements(statement))


def walk_code(nodes: Iterable[ast.AST], pruned: Collection[int] = ()) -> Iterator[ast.AST]:
    """Every node under `nodes`, not inside a nested `def`, class or lambda nor under a node
    whose id is in `pruned`."""
    pending = [node for node in nodes if id(node) not in pruned]
    while pending:
        node = pending.pop()
        yield node
        pending.extend(
            child
            for child in ast.iter_child_nodes(node)
            if not isinstance(child, _LATER) and id(child) not in pruned
        )


def call_arguments(call: ast.Call) -> list[ast.expr]:
    """The arguments of `call`."""
    return [*call.args, *(k.value for k in call.keywords)]


def called_names(nodes: Iterable[ast.AST]) -> Iterator[str]:
    for node in walk_code(nodes):
        if isinstance(node, ast.Call):
            name = last_name(node.func)
            if name is not None:
                yield name


def last_name(func: ast.expr) -> str | None:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def names_bound(target: ast.expr) -> Iterator[str]:
    """The names an assignment target binds (`a`, `a, *b`): not an attribute's nor an item's
    receiver (`self` of `self.x = ...`)."""
    if isinstance(target, ast.Name):
        yield target.id
    elif isinstance(target, ast.Tuple | ast.List):
        for element in target.elts:
            yield from names_bound(element)
    elif isinstance(target, ast.Starred):
        yield from names_bound(target.value)


def target_names(target: ast.expr, unpacking: bool = True) -> set[str]:
    """The names (and attribute names) an assignment target binds (only a lone name or
    attribute without `unpacking`)."""
    if isinstance(target, ast.Name):
        return {target.id}
    if isinstance(target, ast.Attribute):
        return {target.attr}
    if unpacking and isinstance(target, ast.Tuple | ast.List):
        return {n for e in target.elts for n in target_names(e)}
    if unpacking and isinstance(target, ast.Starred):
        return target_names(target.value)
    return set()
