"""A store the trace reads back, kept where the program reads it after the call.

A traced function that stores a traced value in state that outlives the trace (`global g;
g = y`, `nonlocal state; state = y`, `CACHE["norm"] = y`) and reads it back in the same trace
cannot lose the store (its later reads need the traced value), nor move it into a host
callback (the reads would run, at trace time, before it). The fix keeps the store where it
is and makes the function return the stored state as an extra output; each call site puts
that output back where the trace left its tracer:

    def outer(x0):
        state = 0.0

        def inner(y):
            nonlocal state
            state = jnp.sin(y)
            return state * y                    ->  return state * y, state

        _, t = jax.jvp(inner, (x0,), (1.0,))    ->  _, t, state = jax.jvp(
        return t * state                                inner, (x0,), (1.0,), has_aux=True)

After each call the state holds the value the trace left in it, now an array of the call's
output: what the program reads afterwards is what the trace stored, without a tracer. The
plan is made only where this means the same:

- the store runs once, whenever the function runs (a statement of its body, not in a branch
  or a loop), and the function returns once, at its end;
- the function is traced by its `@jax.jit` decorator, or used where it is given to
  `jax.jit`, `jax.grad`, `jax.value_and_grad` (the state is the auxiliary output,
  `has_aux=True`) or `jax.jvp` (also `has_aux=True`) and called at once: not under `vmap`,
  where one call stores one value per element;
- the stored place is a name (`global` or `nonlocal`) or a chain of attributes and constant
  items on one (`CACHE["norm"]`, `STATE.scale`), which means the same place at every call
  site: a module-level one on the host, at the module's top level (or in a function that
  declares the name `global`) for a name rebound; an enclosing function's, in that function;
- every use of the function is such a call, alone on its line or assigned, and no code
  outside the run may call it (a local function, or a private one: see
  `jaxfix.fixes.call_sites`).

Under `jax.jit` a later call that reuses the compiled function does not trace it again, and
the state it returns was computed from what the trace read: as the trace itself did.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import libcst as cst
from libcst.metadata import Assignment, BuiltinAssignment, GlobalScope, ImportAssignment

from jaxfix.analysis.keeping import Holder
from jaxfix.analysis.reasons import Reason, Via
from jaxfix.fixes.after_call_sites import in_parentheses, returned_value, tuple_of
from jaxfix.fixes.call_sites import (
    alone,
    assigned,
    callers_outside,
    count_returns,
    given_first,
    only_binding,
    sole_binding,
)
from jaxfix.fixes.fix import Replacement
from jaxfix.fixes.syntax import descendants, source_of
from jaxfix.fixes.tracing import Statement, TracedAnalysis
from jaxfix.models.transforms import JIT

GRAD, VALUE_AND_GRAD, JVP = "jax.grad", "jax.value_and_grad", "jax.jvp"
# The transforms whose function may be given where it is used, called at once.
APPLIED = frozenset({JIT, GRAD, VALUE_AND_GRAD, JVP})
# ... and those whose function then returns the state as its auxiliary output.
WITH_AUX = frozenset({GRAD, VALUE_AND_GRAD, JVP})
DECORATED = "@jax.jit"
# Where the stored place is known at the call sites.
_RESTORABLE = frozenset({Holder.GLOBAL, Holder.MODULE, Holder.NONLOCAL, Holder.ENCLOSING})


@dataclass(frozen=True)
class Restore:
    """The edits: the function returns the state, each call site stores it."""

    replacements: Mapping[cst.CSTNode, Replacement]


@dataclass(frozen=True)
class _Site:
    """A use of the function: the line, the call whose value it assigns (or drops), the
    transform given the function (None for a call of it), and the assignment's target."""

    line: cst.SimpleStatementLine
    call: cst.Call
    transform: cst.Call | None
    target: cst.BaseAssignTargetExpression | None


def plan_restore(
    analysis: TracedAnalysis, statement: Statement, location: cst.BaseExpression, holder: Holder
) -> Restore | str | None:
    """The fix that returns what `statement` stores in `location` (which outlives the trace,
    as `holder` says) and stores it after each call; None when the function and its calls
    do so already; or why there is none."""
    function = analysis.owner_function(statement)
    context = analysis.functions.get(function) if function is not None else None
    if not isinstance(function, cst.FunctionDef) or context is None:
        return "it is not in a function"
    kind = _kind(context.reasons)
    if kind is None:
        return (
            "its function is traced other than by `@jax.jit`, or given to `jax.jit`,"
            " `jax.grad` or `jax.jvp` and called at once"
        )
    if holder not in _RESTORABLE or not _pure(location):
        return "the place it stores into is not known where the function is called"
    body = list(function.body.body) if isinstance(function.body, cst.IndentedBlock) else []
    if not any(s is statement for s in body):
        return "it runs in a branch or a loop of its function"
    last = body[-1] if body else None
    returned = returned_value(last)
    if returned is None or count_returns(function.body) != 1:
        return "its function does not return once, at its end"
    sites = _sites(analysis, function, kind)
    if isinstance(sites, str):
        return sites
    for site in sites:
        why = _same_place_at(analysis, site, function, location, holder)
        if why:
            return why
    if kind in WITH_AUX and any(_has_aux(site) for site in sites):
        if all(_has_aux(site) for site in sites) and _restored(returned, sites, kind, location):
            return None
        return "its function returns auxiliary values already"
    if kind not in WITH_AUX and _restored(returned, sites, kind, location):
        return None
    assert isinstance(last, cst.SimpleStatementLine)
    new_return = tuple_of([in_parentheses(returned), location.deep_clone()])
    replacements: dict[cst.CSTNode, Replacement] = {
        last: last.with_changes(body=[cst.Return(new_return)])
    }
    root = _root(location).value
    for site in sites:
        if site.target is not None and any(
            isinstance(n, cst.Name) and n.value == root for n in descendants(site.target)
        ):
            return f"a call site assigns `{root}` itself"
        rewritten = _rewrite(site, kind, location)
        if isinstance(rewritten, str):
            return rewritten
        replacements[site.line] = rewritten
    return Restore(replacements)


def _kind(reasons: Sequence[Reason]) -> str | None:
    """How the function is traced: `DECORATED`, or the one transform it is given to."""
    kinds = set()
    for reason in reasons:
        if reason.via is Via.DECORATED and reason.name == JIT:
            kinds.add(DECORATED)
        elif reason.via is Via.PASSED and reason.name in APPLIED:
            kinds.add(reason.name)
        else:
            return None
    return kinds.pop() if len(kinds) == 1 else None


def _pure(location: cst.BaseExpression) -> bool:
    """A name, or attributes and constant items of one: the same place wherever it is
    evaluated where the name means the same."""
    while True:
        if isinstance(location, cst.Name):
            return True
        if isinstance(location, cst.Attribute):
            location = location.value
        elif isinstance(location, cst.Subscript) and len(location.slice) == 1:
            index = location.slice[0].slice
            if not isinstance(index, cst.Index) or not isinstance(
                index.value, cst.SimpleString | cst.Integer
            ):
                return False
            location = location.value
        else:
            return False


def _root(location: cst.BaseExpression) -> cst.Name:
    while isinstance(location, cst.Attribute | cst.Subscript):
        location = location.value
    assert isinstance(location, cst.Name)
    return location


def _sites(analysis: TracedAnalysis, function: cst.FunctionDef, kind: str) -> list[_Site] | str:
    """Every use of `function`, when each is a call of the kind it is traced by, alone on
    its line or assigned, and no code outside the run may call it; else why not."""
    binding = _binding(analysis, function)
    if isinstance(binding, str):
        return binding
    sites: list[_Site] = []
    for access in binding.references:
        site = _site_of(analysis, access.node, function.name.value, kind)
        if isinstance(site, str):
            return site
        sites.append(site)
    if not sites:
        return f"`{function.name.value}` is called nowhere in view"
    return sites


def _binding(analysis: TracedAnalysis, function: cst.FunctionDef) -> Assignment | str:
    """The only binding of `function`'s name, when no code outside the run may use it: a
    local function, or a private one of the module (see `jaxfix.fixes.call_sites`)."""
    scope = analysis.scope_of(function)
    if not isinstance(scope, GlobalScope):
        binding = sole_binding(scope, function)
        return binding or f"`{function.name.value}` is bound more than once"
    return callers_outside(function) or only_binding(analysis, function)


def _site_of(analysis: TracedAnalysis, node: cst.CSTNode, name: str, kind: str) -> _Site | str:
    """The use `node` of the function `name` as a call site of `kind`, or why it is not one."""
    parent = analysis.parent(node)
    transform = None
    call: cst.CSTNode | None = parent
    if kind != DECORATED:
        transform = given_first(analysis, node)
        if transform is None or kind not in analysis.imported_names(transform.func):
            return f"`{name}` is used other than as given to `{kind}`"
        call = transform if kind == JVP else analysis.parent(transform)
        if kind != JVP and not (isinstance(call, cst.Call) and call.func is transform):
            return f"`{kind}({name})` is kept as a function, not called at once"
    elif not (isinstance(call, cst.Call) and call.func is node):
        return f"`{name}` is used as a value, not only called"
    assert isinstance(call, cst.Call)
    line, target = assigned(analysis, call)
    if line is None:
        line, target = alone(analysis, call), None
    if line is None:
        return "a call site is not `target = f(...)` or `f(...)` alone on its line"
    return _Site(line, call, transform, target)


def _same_place_at(
    analysis: TracedAnalysis,
    site: _Site,
    function: cst.FunctionDef,
    location: cst.BaseExpression,
    holder: Holder,
) -> str:
    """Why `location` is another place (or cannot be assigned) at `site` ("" when it is the
    one the function stores into)."""
    root = _root(location).value
    scope = analysis.scope_of(site.call)
    if scope is None:
        return "the call site's scope is not known"
    owner = analysis.owner_function(site.line)
    if holder in (Holder.GLOBAL, Holder.MODULE):
        if analysis.context_of(site.call) is not None:
            return "a call site is in traced code: the value it returns there is a tracer"
        if not all(_module_level(a) for a in scope[root]):
            return f"`{root}` means something else where the function is called"
        rebound = isinstance(location, cst.Name)
        if rebound and owner is not None and root not in analysis.declared_global(owner):
            return (
                f"it assigns the module's `{root}`, which a call site in a function would bind"
                " as its own local"
            )
        return ""
    if scope is not analysis.scope_of(function) or root in analysis.declared_outer_names(owner):
        return f"`{root}` is not the enclosing function's own where the function is called"
    own = [a for a in scope[root] if isinstance(a, Assignment) and a.scope is scope]
    if not any(not analysis.inside(a.node, function) for a in own):
        return f"`{root}` is not bound where the function is called"
    return ""


def _module_level(assignment: object) -> bool:
    return isinstance(assignment, BuiltinAssignment | ImportAssignment) or (
        isinstance(assignment, Assignment) and isinstance(assignment.scope, GlobalScope)
    )


def _has_aux(site: _Site) -> bool:
    transform = site.transform
    return transform is not None and any(
        a.keyword is not None and a.keyword.value == "has_aux" for a in transform.args
    )


def _restored(
    returned: cst.BaseExpression, sites: Sequence[_Site], kind: str, location: cst.BaseExpression
) -> bool:
    """Whether the function returns the state beside its value and every call site stores
    it: through the extra outputs that later fixes wrapped around it (`(y, g), h`)."""
    place = source_of(location)
    targets = [_stored_at(site, kind) for site in sites]
    while isinstance(returned, cst.Tuple) and len(returned.elements) == 2:
        value, state = (e.value for e in returned.elements)
        if source_of(state) == place:
            return all(t is not None and source_of(t[1]) == place for t in targets)
        if kind in WITH_AUX:
            return False
        returned = value
        pairs = [t for t in targets if t is not None]
        if len(pairs) != len(targets):
            return False
        targets = [_pair(t[0]) for t in pairs]
    return False


def _stored_at(site: _Site, kind: str) -> tuple[cst.BaseExpression, cst.BaseExpression] | None:
    """At `site`, what takes the function's value and what takes its extra output."""
    target = site.target
    if not isinstance(target, cst.Tuple):
        return None
    elements = [e.value for e in target.elements]
    if kind == JVP:
        return (elements[0], elements[2]) if len(elements) == 3 else None
    if kind == VALUE_AND_GRAD:
        return _pair(elements[0]) if len(elements) == 2 else None
    return _pair(target)


def _pair(node: cst.BaseExpression) -> tuple[cst.BaseExpression, cst.BaseExpression] | None:
    if isinstance(node, cst.Tuple) and len(node.elements) == 2:
        return node.elements[0].value, node.elements[1].value
    return None


def _rewrite(site: _Site, kind: str, location: cst.BaseExpression) -> Replacement | str:
    """The call site's line, storing the function's extra output in `location`."""
    state = location.deep_clone()
    given = cst.Name("_") if site.target is None else in_parentheses(site.target)
    targets: list[cst.BaseExpression]
    if kind in (DECORATED, JIT, GRAD):
        targets = [given, state]
    elif kind == VALUE_AND_GRAD:
        value, grad = _unpacked(site.target, 2)
        if value is None or grad is None:
            return "the result of `jax.value_and_grad(...)(...)` is not unpacked as `value, grad`"
        targets = [tuple_of([in_parentheses(value), state], parenthesized=True), grad]
    else:
        primal, tangent = _unpacked(site.target, 2)
        if primal is None or tangent is None:
            return "the result of `jax.jvp(...)` is not unpacked as `primals, tangents`"
        targets = [primal, tangent, state]
    call = site.call
    if kind in WITH_AUX:
        assert site.transform is not None
        tight = cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace(""))
        has_aux = cst.Arg(cst.Name("True"), keyword=cst.Name("has_aux"), equal=tight)
        transform = site.transform.with_changes(args=[*site.transform.args, has_aux])
        call = transform if kind == JVP else call.with_changes(func=transform)
    assign = cst.Assign([cst.AssignTarget(tuple_of(targets))], call)
    return site.line.with_changes(body=[assign])


def _unpacked(
    target: cst.BaseAssignTargetExpression | None, count: int
) -> list[cst.BaseExpression | None]:
    """The `count` targets a result is unpacked into (`_` each for a result dropped), or
    `count` Nones when it is not unpacked so."""
    if target is None:
        return [cst.Name("_") for _ in range(count)]
    if isinstance(target, cst.Tuple) and len(target.elements) == count:
        return [e.value for e in target.elements]
    return [None] * count
