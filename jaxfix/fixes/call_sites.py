"""The call sites of a module's function, when a fix may rewrite them all.

A fix that changes what a function returns must rewrite every call: it is made when every use
of the function is a call outside traced code, alone on its line or assigned to names, and no
other module can call it: its name is private (`_encode`), or the module is a script
(`if __name__ == "__main__":`), or a run over the whole project tells that every module that
imports it is rewritten too (`Options.foreign_calls`), and it is not in `__all__`.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst
from libcst.metadata import Assignment, GlobalScope, Scope

from jaxfix.fixes.syntax import source_of
from jaxfix.fixes.tracing import TracedAnalysis
from jaxfix.fixes.traversal import children

# The transforms whose function may return auxiliary values beside what they differentiate.
AUX_TRANSFORMS = frozenset({"jax.grad", "jax.value_and_grad"})
SCAN = "jax.lax.scan"
SCAN_REVERSE_POSITION = 4  # `lax.scan(f, init, xs, length, reverse)`


@dataclass(frozen=True)
class AuxSite:
    """`jax.grad(f)(...)` (or `jax.value_and_grad`): the call, and the transform's own call."""

    call: cst.Call
    transform: cst.Call
    with_value: bool  # `value_and_grad`: its result is `(value, grad)`


@dataclass(frozen=True)
class ScanSite:
    """`lax.scan(f, init, xs)`, run forwards: each iteration's values come out stacked."""

    call: cst.Call


def call_sites(analysis: TracedAnalysis, function: cst.FunctionDef) -> list[cst.Call] | str:
    """Every call of `function`, when those are all its uses and no other module's code in
    the run calls it (`Options.foreign_calls`); else why not."""
    binding = only_binding(analysis, function)
    if isinstance(binding, str):
        return binding
    name = function.name.value
    calls: list[cst.Call] = []
    for access in binding.references:
        parent = analysis.parent(access.node)
        if not isinstance(parent, cst.Call) or parent.func is not access.node:
            return f"`{name}` is used as a value, not only called"
        if analysis.context_of(parent) is not None:
            return f"`{name}` is called from traced code"
        calls.append(parent)
    return calls


def uses_of(analysis: TracedAnalysis, function: cst.FunctionDef) -> list[cst.Name] | None:
    """Where the module uses `function`'s name, when those are all its uses (see
    `only_binding`); else None."""
    binding = only_binding(analysis, function)
    if isinstance(binding, str):
        return None
    return [access.node for access in binding.references if isinstance(access.node, cst.Name)]


def aux_sites(analysis: TracedAnalysis, function: cst.FunctionDef) -> list[AuxSite] | str:
    """Every use of `function`, when each is `jax.grad(function)(...)` (or `value_and_grad`)
    called at once outside traced code, without auxiliary outputs yet; else why not."""
    binding = only_binding(analysis, function)
    if isinstance(binding, str):
        return binding
    name = function.name.value
    sites: list[AuxSite] = []
    for access in binding.references:
        transform = given_first(analysis, access.node)
        names = analysis.imported_names(transform.func) & AUX_TRANSFORMS if transform else set()
        if transform is None or not names:
            return f"`{name}` is used other than as `jax.grad({name})(...)`"
        if any(a.keyword is not None and a.keyword.value == "has_aux" for a in transform.args):
            return f"`{name}` returns auxiliary values already"
        call = analysis.parent(transform)
        if not isinstance(call, cst.Call) or call.func is not transform:
            return f"the gradient of `{name}` is kept as a function, not called at once"
        if analysis.context_of(call) is not None:
            return f"the gradient of `{name}` is taken in traced code"
        sites.append(AuxSite(call, transform, "jax.value_and_grad" in names))
    return sites


def scan_sites(analysis: TracedAnalysis, function: cst.FunctionDef) -> list[ScanSite] | str:
    """Every use of `function`, when each is `lax.scan(function, ...)` outside traced code,
    run forwards (the stacked values are in the order the iterations ran); else why not."""
    binding = only_binding(analysis, function)
    if isinstance(binding, str):
        return binding
    name = function.name.value
    sites: list[ScanSite] = []
    for access in binding.references:
        call = given_first(analysis, access.node)
        if call is None or SCAN not in analysis.imported_names(call.func):
            return f"`{name}` is used other than as `lax.scan({name}, ...)`"
        positional = [a for a in call.args if a.keyword is None]
        reverse = [a for a in call.args if a.keyword is not None and a.keyword.value == "reverse"]
        if len(positional) > SCAN_REVERSE_POSITION or reverse:
            return f"`{name}` is scanned in an order jaxfix does not follow (`reverse`)"
        if analysis.context_of(call) is not None:
            return f"`{name}` is scanned in traced code"
        sites.append(ScanSite(call))
    return sites


def given_first(analysis: TracedAnalysis, node: cst.CSTNode) -> cst.Call | None:
    """The call `node` is the first positional argument of (`jax.grad(f)`), if it is one."""
    call = _given_to(analysis, node)
    first = call.args[0] if call is not None else None
    return call if first is not None and first.value is node and first.keyword is None else None


def _given_to(analysis: TracedAnalysis, node: cst.CSTNode) -> cst.Call | None:
    """The call `node` is an argument of, if it is one."""
    arg = analysis.parent(node)
    call = analysis.parent(arg) if isinstance(arg, cst.Arg) else None
    return call if isinstance(call, cst.Call) else None


def sole_binding(scope: Scope | None, function: cst.FunctionDef) -> Assignment | None:
    """The binding of `function`'s name in `scope`, when the `def` is its only one."""
    name = function.name.value
    bindings = [a for a in scope.assignments[name] if isinstance(a, Assignment)] if scope else []
    return bindings[0] if len(bindings) == 1 and bindings[0].node is function else None


def only_binding(analysis: TracedAnalysis, function: cst.FunctionDef) -> Assignment | str:
    """The module-level binding of `function`, when it is its only one and no other module's
    code in the run uses it (`Options.foreign_calls`); else why not."""
    name = function.name.value
    scope = analysis.scope_of(function)
    if not isinstance(scope, GlobalScope):
        return f"`{name}` is not a module-level function"
    binding = sole_binding(scope, function)
    if binding is None:
        return f"`{name}` is bound more than once"
    if name in exported(analysis.module):
        return f"`{name}` is in `__all__`: other code may call it"
    foreign = {c.function: c.why_not for c in analysis.project.foreign_calls if not c.keeps_return}
    return foreign.get(name) or binding


def only_here(analysis: TracedAnalysis, function: cst.FunctionDef) -> str:
    """Why other modules may call `function` ("" when they cannot: see the module's docs)."""
    name = function.name.value
    foreign = {c.function for c in analysis.project.foreign_calls if not c.keeps_return}
    if name in foreign or name.startswith("_") or is_script(analysis.module):
        return ""
    return (
        f"`{name}` is public: other modules may call it (make it private, or run jaxfix over"
        " every module that imports it)"
    )


def callers_outside(function: cst.FunctionDef) -> str:
    """Why code outside the run may call `function` ("" when it cannot): a fix that changes
    what it returns would hand such callers something else. Only a private name (`_step`)
    is known to have no callers but those the run sees: any code may import a public one,
    also from a module that runs as a script (`if __name__ == "__main__":` is there for
    being imported too)."""
    name = function.name.value
    if name.startswith("_"):
        return ""
    return f"`{name}` is public: code outside the run may call it"


def assigned(
    analysis: TracedAnalysis, site: cst.Call
) -> tuple[cst.SimpleStatementLine | None, cst.BaseAssignTargetExpression | None]:
    """For `target = f(...)` alone on its line: the line and the target."""
    assign = analysis.parent(site)
    line = analysis.parent(assign) if assign is not None else None
    if (
        isinstance(assign, cst.Assign)
        and len(assign.targets) == 1
        and isinstance(line, cst.SimpleStatementLine)
        and len(line.body) == 1
    ):
        return line, assign.targets[0].target
    return None, None


def alone(analysis: TracedAnalysis, site: cst.Call) -> cst.SimpleStatementLine | None:
    """For `f(...)` alone on its line, its result dropped: the line."""
    expression = analysis.parent(site)
    line = analysis.parent(expression) if expression is not None else None
    if (
        isinstance(expression, cst.Expr)
        and isinstance(line, cst.SimpleStatementLine)
        and len(line.body) == 1
    ):
        return line
    return None


def count_returns(node: cst.CSTNode) -> int:
    """Return statements in a function's own body (not in nested functions)."""
    count = 0
    for child in children(node):
        if isinstance(child, cst.FunctionDef | cst.Lambda | cst.ClassDef):
            continue
        count += isinstance(child, cst.Return) + count_returns(child)
    return count


def exported(module: cst.Module) -> set[str]:
    """The names a module-level `__all__ = [...]` lists."""
    names: set[str] = set()
    for statement in module.body:
        if not isinstance(statement, cst.SimpleStatementLine):
            continue
        for small in statement.body:
            if (
                isinstance(small, cst.Assign | cst.AugAssign)
                and isinstance(target := _target(small), cst.Name)
                and target.value == "__all__"
                and isinstance(small.value, cst.List | cst.Tuple)
            ):
                names.update(
                    e.value.evaluated_value
                    for e in small.value.elements
                    if isinstance(e.value, cst.SimpleString)
                    and isinstance(e.value.evaluated_value, str)
                )
    return names


def _target(small: cst.Assign | cst.AugAssign) -> cst.BaseExpression:
    return small.targets[0].target if isinstance(small, cst.Assign) else small.target


def is_script(module: cst.Module) -> bool:
    """Whether the module runs as a program (`if __name__ == "__main__":`)."""
    return any(
        isinstance(statement, cst.If)
        and "__main__" in source_of(statement.test)
        and "__name__" in source_of(statement.test)
        for statement in module.body
    )
