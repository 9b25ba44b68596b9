"""A memo dict that a traced function checks and fills, and what dropping it removes.

The pattern: `if key in memo: return memo[key]` at the top level of a function's body, and later
`memo[key] = value`, where `memo` is a module-level dict (`MEMO = {}`) or the function's own
object's (`self._memo`, made `{}` in the class's methods). Under a trace the key is a tracer, so
the memo can only fail; `jax.jit` already caches the traced computation. Dropping the two
statements and the dict's bindings keeps what the function returns, and deletes nothing a user
reads, when:
- nothing else in the file uses the dict (no other read, write, `len`, `getattr`);
- the rest of the function is JAX code (`TracedAnalysis.is_jax_function`);
- no code in view runs the function eagerly, where the memo works and holds values a later call
  returns (`jaxfix.fixes.eager_calls`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import libcst as cst

from jaxfix.fixes.eager_calls import eager_calls
from jaxfix.fixes.syntax import first_parameter, source_of
from jaxfix.fixes.tracing import TracedAnalysis


@dataclass(frozen=True)
class MemoRemoval:
    """`statements`: the memo's lookup, its store and the dict's bindings, to remove; or none,
    with `kept` saying why the memo the function holds stays."""

    statements: tuple[cst.CSTNode, ...] = ()
    kept: str = ""


def memo_removal(analysis: TracedAnalysis, function: cst.FunctionDef) -> MemoRemoval | None:
    """What dropping the memo of the traced `function` removes (see the module's docs); None
    when its body holds no memo pattern."""
    body = list(function.body.body) if isinstance(function.body, cst.IndentedBlock) else []
    lookups = [(s, found) for s in body if (found := _memo_lookup(s)) is not None]
    if len(lookups) != 1:
        return None
    lookup, (memo, key) = lookups[0]
    wanted = (source_of(memo), key)
    stores = [s for s in body[body.index(lookup) + 1 :] if _memo_store(s) == wanted]
    if len(stores) != 1:
        return None
    removed: list[cst.CSTNode] = [lookup, stores[0]]
    bindings = _bindings(analysis, memo, function, removed)
    if isinstance(bindings, str):
        return MemoRemoval(kept=bindings)
    name = function.name.value
    if not analysis.is_jax_function(function, skip=removed):
        return MemoRemoval(kept=f"the rest of `{name}` is not only JAX code")
    traced = analysis.functions.get(function)
    eager = eager_calls(analysis, traced) if traced is not None else None
    if eager is None or eager.in_view or eager.blocked or analysis.used_eagerly(function):
        return MemoRemoval(kept=f"`{name}` also runs outside a trace, where the memo holds values")
    return MemoRemoval((*removed, *bindings))


def _bindings(
    analysis: TracedAnalysis,
    memo: cst.BaseExpression,
    function: cst.FunctionDef,
    removed: Sequence[cst.CSTNode],
) -> list[cst.CSTNode] | str:
    """The statements that bind the memo dict to an empty one, or why it is not private to the
    memo pattern."""
    shown = source_of(memo)
    not_private = f"`{shown}` is used outside its lookup and store"
    if isinstance(memo, cst.Name):
        binding = _top_level_binding(analysis.module, memo.value)
        if binding is None or not analysis.used_only_in(memo.value, [*removed, binding]):
            return not_private
        return [binding]
    if not isinstance(memo, cst.Attribute) or not isinstance(memo.value, cst.Name):
        return not_private
    values = analysis.instance_attribute_values(memo)
    if memo.value.value != first_parameter(function) or not values:
        return not_private
    if not all(map(_empty_dict, values)):
        return f"`{shown}` is made with entries, or changed, elsewhere in its class"
    bindings = _instance_bindings(analysis, memo, function)
    if len(bindings) != len(values):
        return not_private
    if not analysis.attribute_used_only_in(memo.attr.value, [*removed, *bindings]):
        return not_private
    return bindings


def _instance_bindings(
    analysis: TracedAnalysis, memo: cst.Attribute, function: cst.FunctionDef
) -> list[cst.CSTNode]:
    """The lines `self.name = {}` of the methods of `function`'s class (`memo` is
    `self.name`)."""
    block = analysis.parent(function)
    owner = analysis.parent(block) if block is not None else None
    if not isinstance(owner, cst.ClassDef) or not isinstance(owner.body, cst.IndentedBlock):
        return []
    found: list[cst.CSTNode] = []
    for method in owner.body.body:
        receiver = first_parameter(method) if isinstance(method, cst.FunctionDef) else None
        if receiver is None or not isinstance(method, cst.FunctionDef):
            continue
        lines = method.body.body if isinstance(method.body, cst.IndentedBlock) else ()
        for line in lines:
            target = _assigned(line)
            if (
                isinstance(target, cst.Attribute)
                and isinstance(target.value, cst.Name)
                and target.value.value == receiver
                and target.attr.value == memo.attr.value
            ):
                found.append(line)
    return found


def _top_level_binding(module: cst.Module, name: str) -> cst.CSTNode | None:
    """The module-level statement `name = {}` (or `dict()`)."""
    for statement in module.body:
        target = _assigned(statement)
        if isinstance(target, cst.Name) and target.value == name:
            return statement
    return None


def _assigned(statement: cst.CSTNode) -> cst.BaseAssignTargetExpression | None:
    """The target of the line `target = {}` (or `dict()`)."""
    if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
        return None
    assign = statement.body[0]
    if not isinstance(assign, cst.Assign) or len(assign.targets) != 1:
        return None
    return assign.targets[0].target if _empty_dict(assign.value) else None


def _empty_dict(value: cst.BaseExpression) -> bool:
    """`{}` or `dict()`: a memo that holds nothing until the function fills it."""
    if isinstance(value, cst.Dict):
        return not value.elements
    return (
        isinstance(value, cst.Call)
        and isinstance(value.func, cst.Name)
        and value.func.value == "dict"
        and not value.args
    )


def _memo_lookup(statement: cst.CSTNode) -> tuple[cst.BaseExpression, str] | None:
    """(memo, key) for `if key in memo: return memo[key]` (no `else`), `memo` a name or
    `self.name`."""
    if not isinstance(statement, cst.If) or statement.orelse is not None:
        return None
    test = statement.test
    if not (
        isinstance(test, cst.Comparison)
        and len(test.comparisons) == 1
        and isinstance(test.comparisons[0].operator, cst.In)
    ):
        return None
    memo, key = test.comparisons[0].comparator, source_of(test.left)
    if not isinstance(memo, cst.Name | cst.Attribute):
        return None
    lines = statement.body.body if isinstance(statement.body, cst.IndentedBlock) else []
    if len(lines) != 1 or not isinstance(lines[0], cst.SimpleStatementLine):
        return None
    (returned,) = lines[0].body if len(lines[0].body) == 1 else (None,)
    value = returned.value if isinstance(returned, cst.Return) else None
    return (memo, key) if _memo_item(value) == (source_of(memo), key) else None


def _memo_store(statement: cst.CSTNode) -> tuple[str, str] | None:
    """(memo, key) for the line `memo[key] = value`."""
    if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
        return None
    assign = statement.body[0]
    if not isinstance(assign, cst.Assign) or len(assign.targets) != 1:
        return None
    return _memo_item(assign.targets[0].target)


def _memo_item(expr: cst.CSTNode | None) -> tuple[str, str] | None:
    """(memo, key) for `memo[key]`, `memo` a name or `self.name`."""
    if not isinstance(expr, cst.Subscript) or not isinstance(expr.value, cst.Name | cst.Attribute):
        return None
    if len(expr.slice) != 1 or not isinstance(expr.slice[0].slice, cst.Index):
        return None
    return source_of(expr.value), source_of(expr.slice[0].slice.value)
