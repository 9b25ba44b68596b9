"""A jitted function's parameter made static, where every call in view passes a Python constant.

A jitted `kernel(x, order)` that hands its traced `order` to a helper jitted with `order`
static fails (`ValueError: Non-hashable static arguments are not supported`). When every call
of `kernel` the module shows passes a Python constant for `order` (`kernel(x, 2)`), the
parameter can be static in `kernel` too: `@jax.jit` becomes `@partial(jax.jit,
static_argnames="order")`, and `order` is then the Python value the helper needs. The change
is unsafe: a caller elsewhere that passes an array fails, and each new value compiles again.
It is made only where the function's body uses the parameter as a value (no `order.shape`,
no `order[0]`: an array's attributes that a Python number lacks).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import libcst as cst
from libcst.metadata import Assignment, BuiltinAssignment

from jaxfix.fixes.call_sites import only_binding, only_here
from jaxfix.fixes.fix import ImportNeeded
from jaxfix.fixes.hoist import TIGHT, module_statements_before
from jaxfix.fixes.syntax import source_of
from jaxfix.fixes.tracing import TracedAnalysis
from jaxfix.models.transforms import JIT

FUNCTOOLS_PARTIAL = "functools.partial"


@dataclass(frozen=True)
class StaticInCaller:
    """The decorator to replace, its replacement, the imports it needs, and who may still
    call the function with an array ("" when no one in view or elsewhere may)."""

    decorator: cst.Decorator
    new: cst.Decorator
    imports: Sequence[ImportNeeded]
    elsewhere: str


def static_in_caller(
    analysis: TracedAnalysis, function: cst.FunctionDef, params: Sequence[str]
) -> StaticInCaller | str:
    """`@jax.jit` on `function` made `@partial(jax.jit, static_argnames=params)`, when every
    call of `function` in the module passes Python constants for `params`; else why not."""
    name = function.name.value
    decorator = _bare_jit(analysis, function)
    if decorator is None:
        return f"`{name}` is not decorated with a bare `@jax.jit`"
    positional = [p.name.value for p in (*function.params.posonly_params, *function.params.params)]
    keyword_only = {p.name.value for p in function.params.kwonly_params}
    if not set(params) <= set(positional) | keyword_only:
        return f"`{name}` takes them through `*args` or `**kwargs`"
    binding = only_binding(analysis, function)
    if isinstance(binding, str):
        return binding
    calls = 0
    for access in binding.references:
        call = analysis.parent(access.node)
        if not isinstance(call, cst.Call) or call.func is not access.node:
            return f"`{name}` is used as a value, not only called"
        for param in params:
            value = _argument(call, param, positional) or _default(function, param)
            if value is None or not _constant(value):
                line = analysis.line_of(call)
                return (
                    f"the call of `{name}` on line {line} passes `{param}` a value, not a constant"
                )
        calls += 1
    if not calls:
        return f"no call of `{name}` is in view"
    for param in params:
        why = _used_as_array(analysis, function, param)
        if why:
            return why
    partial, imports = partial_name(analysis, decorator)
    if not partial:
        return "`functools.partial` cannot be named here"
    listed = ", ".join(f'"{p}"' for p in params)
    names = cst.parse_expression(f"({listed},)" if len(params) > 1 else listed)
    made = cst.Call(
        func=cst.parse_expression(partial),
        args=[
            cst.Arg(
                decorator.decorator, comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
            ),
            cst.Arg(names, keyword=cst.Name("static_argnames"), equal=TIGHT),
        ],
    )
    new = decorator.with_changes(decorator=made)
    elsewhere = (
        f"`{name}` is public: other modules may call it" if only_here(analysis, function) else ""
    )
    return StaticInCaller(decorator, new, imports, elsewhere)


def partial_name(analysis: TracedAnalysis, at: cst.CSTNode) -> tuple[str, list[ImportNeeded]]:
    """How `at` can refer to `functools.partial`: the name a module-level import before it
    binds (`from functools import partial`, `import functools`), or `functools.partial` with
    `import functools` added; ("", []) when `functools` names something else."""
    for small in module_statements_before(analysis, at):
        if isinstance(small, cst.ImportFrom) and not isinstance(small.names, cst.ImportStar):
            module = small.module
            if module is not None and not small.relative and source_of(module) == "functools":
                for alias in small.names:
                    if alias.evaluated_name == "partial":
                        name = alias.evaluated_alias or "partial"
                        if _only_imported(analysis, at, name):
                            return name, []
        elif isinstance(small, cst.Import):
            for alias in small.names:
                if alias.evaluated_name == "functools":
                    name = alias.evaluated_alias or "functools"
                    if _only_imported(analysis, at, name):
                        return f"{name}.partial", []
    if not _only_imported(analysis, at, "functools"):
        return "", []
    return FUNCTOOLS_PARTIAL, [ImportNeeded("functools")]


def _only_imported(analysis: TracedAnalysis, at: cst.CSTNode, name: str) -> bool:
    scope = analysis.scope_of(at)
    if scope is None:
        return True
    return all(
        isinstance(a, BuiltinAssignment)
        or (isinstance(a, Assignment) and isinstance(a.node, cst.Import | cst.ImportFrom))
        for a in scope[name]
    )


def _bare_jit(analysis: TracedAnalysis, function: cst.FunctionDef) -> cst.Decorator | None:
    """The `@jax.jit` (not a call: `@jax.jit(...)`, `@partial(jax.jit, ...)`) on `function`."""
    for decorator in function.decorators:
        expr = decorator.decorator
        if not isinstance(expr, cst.Call) and JIT in analysis.imported_names(expr):
            return decorator
    return None


def _argument(call: cst.Call, param: str, positional: list[str]) -> cst.BaseExpression | None:
    for index, arg in enumerate(call.args):
        if arg.star:
            return None
        if arg.keyword is not None:
            if arg.keyword.value == param:
                return arg.value
        elif index < len(positional) and positional[index] == param:
            return arg.value
    return None


def _default(function: cst.FunctionDef, param: str) -> cst.BaseExpression | None:
    for p in _parameters(function):
        if p.name.value == param:
            return p.default
    return None


def _constant(value: cst.BaseExpression) -> bool:
    """A Python literal (a number, a string, `True`, `None`, a tuple of them): hashable, the
    same value at every call."""
    if isinstance(value, cst.UnaryOperation) and isinstance(value.operator, cst.Minus):
        value = value.expression
    if isinstance(value, cst.Integer | cst.Float | cst.SimpleString):
        return True
    if isinstance(value, cst.Name):
        return value.value in ("True", "False", "None")
    if isinstance(value, cst.Tuple):
        return all(isinstance(e, cst.Element) and _constant(e.value) for e in value.elements)
    return False


def _used_as_array(analysis: TracedAnalysis, function: cst.FunctionDef, param: str) -> str:
    """Why `param` must stay an array in `function` ("" when a Python value serves): it is
    assigned there, or read as an array (`order.shape`, `order.astype`, `order[0]`)."""
    node = next(p for p in _parameters(function) if p.name.value == param)
    scope = analysis.scope_of(node.name)
    assignments = list(scope.assignments[param]) if scope is not None else []
    only = assignments[0] if len(assignments) == 1 else None
    if not isinstance(only, Assignment) or only.node is not node:
        return f"`{param}` is assigned in `{function.name.value}`"
    for access in only.references:
        parent = analysis.parent(access.node)
        if isinstance(parent, cst.Attribute | cst.Subscript) and parent.value is access.node:
            line = analysis.line_of(access.node)
            return f"`{param}` is used as an array on line {line}"
    return ""


def _parameters(function: cst.FunctionDef) -> tuple[cst.Param, ...]:
    params = function.params
    return (*params.posonly_params, *params.params, *params.kwonly_params)
