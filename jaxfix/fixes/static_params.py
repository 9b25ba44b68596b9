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

from jaxfix.fixes.call_sites import only_binding, only_here, sole_binding
from jaxfix.fixes.fix import ImportNeeded
from jaxfix.fixes.hoist import TIGHT, module_statements_before
from jaxfix.fixes.syntax import source_of
from jaxfix.fixes.tracing import OutsideSlice, TracedAnalysis
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
    named = {p.name.value for p in (*function.params.params, *function.params.kwonly_params)}
    if not set(params) <= named:
        return f"`{name}` takes them positionally only, or through `*args` or `**kwargs`"
    binding = only_binding(analysis, function)
    if isinstance(binding, str):
        return binding
    if not analysis.reads_in_view(name):
        raise OutsideSlice  # every call must be seen
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


def _bound_once(
    analysis: TracedAnalysis, function: cst.FunctionDef, param: str
) -> Assignment | None:
    """The binding of `param` by `function`'s signature, when nothing in it assigns `param`
    again (its references are then all reads of the argument)."""
    node = next(p for p in _parameters(function) if p.name.value == param)
    scope = analysis.scope_of(node.name)
    assignments = list(scope.assignments[param]) if scope is not None else []
    only = assignments[0] if len(assignments) == 1 else None
    return only if isinstance(only, Assignment) and only.node is node else None


def _used_as_array(analysis: TracedAnalysis, function: cst.FunctionDef, param: str) -> str:
    """Why `param` must stay an array in `function` ("" when a Python value serves): it is
    assigned there, or read as an array (`order.shape`, `order.astype`, `order[0]`)."""
    only = _bound_once(analysis, function, param)
    if only is None:
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


# ----- a static parameter made traced, where only traced code calls with traced values ------

# What builds a pytree of arrays from arrays (a container jax traces leaf by leaf).
PYTREE_MAKERS = frozenset({"builtins.tuple", "builtins.list"})
NAMEDTUPLE_MAKERS = frozenset({"collections.namedtuple", "typing.NamedTuple"})
STATIC_KEYWORDS = ("static_argnames", "static_argnums")


@dataclass(frozen=True)
class TracedInCallee:
    """The jit decorator of the callee and its replacement, without the parameter in its
    static ones."""

    decorator: cst.Decorator
    new: cst.Decorator


def traced_in_callee(
    analysis: TracedAnalysis,
    function: cst.FunctionDef,
    param: str,
    value: cst.BaseExpression,
) -> TracedInCallee | str:
    """`param` dropped from `static_argnames` / `static_argnums` of the
    `@partial(jax.jit, ...)` on `function`, when only traced code calls `function`, `value`
    (what a traced call passes) is a pytree of arrays (a tracer, a tuple, a list or a
    `namedtuple` built from them), and `function` only hands `param` (or a field or item of
    it) to JAX functions; else why not."""
    name = function.name.value
    found = _jit_partial(analysis, function)
    if found is None:
        return f"`{name}` is not decorated with `@partial(jax.jit, ...)`"
    decorator, call = found
    positional = [p.name.value for p in (*function.params.posonly_params, *function.params.params)]
    binding = sole_binding(analysis.scope_of(function), function)
    if binding is None:
        return f"`{name}` is bound more than once"
    if not analysis.reads_in_view(name):
        raise OutsideSlice  # every call must be seen
    if not _pytree_of_arrays(analysis, value):
        return "the value is not a tuple, list or `namedtuple` of arrays"
    for access in binding.references:
        line = analysis.line_of(access.node)
        if analysis.context_of(access.node) is None:
            return f"`{name}` is also used outside traced code (line {line})"
        site = analysis.parent(access.node)
        if not isinstance(site, cst.Call) or site.func is not access.node:
            return f"`{name}` is used as a value, not only called (line {line})"
        given = _argument(site, param, positional)
        if given is None or not _pytree_of_arrays(analysis, given):
            return f"the call of `{name}` on line {line} passes `{param}` a Python value"
    why = _only_given_to_jax(analysis, function, param)
    if why:
        return why
    args: list[cst.Arg] = []
    dropped = False
    for arg in call.args:
        keyword = arg.keyword.value if arg.keyword is not None else None
        if keyword in STATIC_KEYWORDS:
            index = positional.index(param) if param in positional else None
            kept = _without(arg.value, param if keyword == "static_argnames" else index)
            if isinstance(kept, str):
                return kept
            if kept is not None:
                dropped = True
                if kept.elements:
                    args.append(arg.with_changes(value=_listed(kept, arg.value)))
                continue
        args.append(arg)
    if not dropped:
        return f"`{param}` is not listed in the static arguments of `{name}`"
    if len(args) == 1:  # `partial(jax.jit)`: the transform alone
        new_expr: cst.BaseExpression = args[0].value
    else:
        last = args[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
        new_expr = call.with_changes(args=[*args[:-1], last])
    return TracedInCallee(decorator, decorator.with_changes(decorator=new_expr))


def _jit_partial(
    analysis: TracedAnalysis, function: cst.FunctionDef
) -> tuple[cst.Decorator, cst.Call] | None:
    for decorator in function.decorators:
        expr = decorator.decorator
        if (
            isinstance(expr, cst.Call)
            and FUNCTOOLS_PARTIAL in _resolved(analysis, expr.func)
            and expr.args
            and expr.args[0].keyword is None
            and not expr.args[0].star
            and JIT in analysis.imported_names(expr.args[0].value)
        ):
            return decorator, expr
    return None


def _resolved(analysis: TracedAnalysis, func: cst.BaseExpression) -> set[str]:
    """The names `func` (a decorator's callee) resolves to. A slice keeps a `def` without what
    its decorators mention: a name bound nowhere in it needs the whole file."""
    names = analysis.imported_names(func)
    base = func
    while isinstance(base, cst.Attribute):
        base = base.value
    if not names and isinstance(base, cst.Name) and not analysis.assignments(base):
        raise OutsideSlice
    return names


def _without(listed: cst.BaseExpression, wanted: object) -> cst.Tuple | str | None:
    """`listed` (a string, an integer, or a tuple or list of them) without `wanted`, as a
    tuple; None when `wanted` is not there; why not when it is not a literal."""
    if isinstance(listed, cst.Tuple | cst.List):
        items = [e.value for e in listed.elements if isinstance(e, cst.Element)]
    else:
        items = [listed]
    values: list[object] = []
    for item in items:
        if isinstance(item, cst.SimpleString | cst.Integer):
            values.append(item.evaluated_value)
        else:
            return "the static arguments are not listed literally"
    if wanted not in values:
        return None
    kept = [item for item, v in zip(items, values, strict=True) if v != wanted]
    return cst.Tuple([cst.Element(item) for item in kept])


def _listed(kept: cst.Tuple, original: cst.BaseExpression) -> cst.BaseExpression:
    """What is left, written as it was (one item alone where the original was not a list)."""
    if len(kept.elements) == 1 and not isinstance(original, cst.Tuple | cst.List):
        return kept.elements[0].value
    text = ", ".join(source_of(e.value) for e in kept.elements)
    if isinstance(original, cst.List):
        return cst.parse_expression(f"[{text}]")
    return cst.parse_expression(f"({text},)" if len(kept.elements) == 1 else f"({text})")


def _pytree_of_arrays(analysis: TracedAnalysis, value: cst.BaseExpression, depth: int = 0) -> bool:
    """A tracer, or a tuple, a list or a `namedtuple` made of values jax traces (through a
    local name bound once)."""
    if depth > 3:
        return False
    if isinstance(value, cst.Tuple | cst.List):
        return all(
            isinstance(e, cst.Element) and _pytree_of_arrays(analysis, e.value, depth + 1)
            for e in value.elements
        )
    if isinstance(value, cst.Call) and (
        analysis.imported_names(value.func) & PYTREE_MAKERS or _namedtuple(analysis, value)
    ):
        return bool(value.args) and all(
            not a.star and _pytree_of_arrays(analysis, a.value, depth + 1) for a in value.args
        )
    if isinstance(value, cst.Call) and analysis.class_named(value.func) is not None:
        return False  # an instance of the module's own class: no pytree unless registered
    if isinstance(value, cst.Name):
        assignments = analysis.assignments(value)
        if len(assignments) == 1 and isinstance(assignments[0], Assignment):
            target = analysis.parent(assignments[0].node)
            assign = analysis.parent(target) if isinstance(target, cst.AssignTarget) else None
            if isinstance(assign, cst.Assign) and len(assign.targets) == 1:
                return _pytree_of_arrays(analysis, assign.value, depth + 1)
    return analysis.is_traced(value)


def _namedtuple(analysis: TracedAnalysis, call: cst.Call) -> bool:
    """A call of a class made by `collections.namedtuple(...)` (or `typing.NamedTuple`)."""
    func = call.func
    return isinstance(func, cst.Name) and analysis.is_assigned_from(func, NAMEDTUPLE_MAKERS)


def _only_given_to_jax(analysis: TracedAnalysis, function: cst.FunctionDef, param: str) -> str:
    """Why `function` needs `param` as a Python value ("" when it only hands it, or a field
    or item of it, to JAX functions, which take arrays)."""
    only = _bound_once(analysis, function, param)
    if only is None:
        return f"`{param}` is assigned in `{function.name.value}`"
    for access in only.references:
        use: cst.CSTNode = access.node
        parent = analysis.parent(use)
        if isinstance(parent, cst.Attribute | cst.Subscript) and parent.value is use:
            use, parent = parent, analysis.parent(parent)
        call = analysis.parent(parent) if isinstance(parent, cst.Arg) else None
        if not isinstance(call, cst.Call) or not any(
            n.startswith("jax.") for n in analysis.imported_names(call.func)
        ):
            line = analysis.line_of(access.node)
            return f"`{function.name.value}` uses `{param}` as a Python value (line {line})"
    return ""
