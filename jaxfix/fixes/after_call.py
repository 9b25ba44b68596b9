"""Host effects after the call: the fix that is deterministic on every backend.

A host statement in a jitted function (`BLOBS.append(pickle.dumps(h))`) cannot run in the
trace. When every call site of the function is in view (`jaxfix.fixes.call_sites`), the statement
moves *out*: the function returns the values it needs as extra outputs, and each caller runs
it right after the call on their host copies:

    @jax.jit                                   @jax.jit
    def step(x):                               def step(x):
        h = jnp.tanh(x)                  ->        h = jnp.tanh(x)
        BLOBS.append(pickle.dumps(h))              return h * 2, h
        return h * 2
                                               out, h = step(xs)
    out = step(xs)                             BLOBS.append(pickle.dumps(jax.device_get(h)))

`jax.device_get` waits for the values, so the effect has run when the next line does: no host
callback, no `jax.effects_barrier()`. The plan is made only where this means the same:

- the function is jitted by its decorator (under `vmap` the values would be stacked), or
  differentiated where it is used, `jax.grad(f)(...)` or `jax.value_and_grad(f)(...)`
  called at once on the host: then the values are its auxiliary output (`has_aux=True`,
  `g, h = jax.grad(f, has_aux=True)(x)`), which the gradient leaves as they are; or it is
  the body of a forward `lax.scan(f, ...)` on the host: it returns `carry, (y, h)`, the
  scan stacks `h` beside its `ys`, and the effect runs once per iteration, in order, in
  `for h in hs:` after the scan;
- it returns once, at the end; the statements run once per call (not in a branch or a loop);
- they read only the traced values they are given (names not rebound after them), names of
  the module (which mean the same where the function is called) and what they bind themselves,
  and assign no global of the module from a call site in a function (it would be a local);
- every call site is `target = f(...)` or `f(...)` alone on its line (for
  `value_and_grad`, `value, grad = ...`; for `lax.scan`, `carry, ys = ...`), and there is one
  in view: the function is private (`_step`: code outside the run may call a public one, and
  would get a tuple), and the other modules of the run that call it change with it;
- the statements are every host statement that a fix takes out of the function, whichever
  rule found them (`FunctionMoves`), and the function runs no host callback: moving some after
  the call and leaving others in callbacks would change the effects' order.

Otherwise the caller's rule falls back to a host callback (`jaxfix.fixes.host_effects`). The
call sites are rewritten by `jaxfix.fixes.after_call_sites`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import libcst as cst
from libcst.metadata import Assignment, BuiltinAssignment, GlobalScope

from jaxfix.analysis.project import WAITS
from jaxfix.analysis.reasons import Via
from jaxfix.fixes.after_call_sites import (
    JAX,
    PAYLOAD,
    EffectAfterCall,
    Wrapping,
    assigned_globals,
    in_parentheses,
    on_host,
    origin_of,
    packed,
    returned_value,
    rewrite_aux_site,
    rewrite_scan_site,
    rewrite_site,
    tuple_of,
)
from jaxfix.fixes.call_sites import (
    AUX_TRANSFORMS,
    SCAN,
    AuxSite,
    ScanSite,
    aux_sites,
    call_sites,
    callers_outside,
    count_returns,
    scan_sites,
)
from jaxfix.fixes.fix import Fix, FixingRule, ImportNeeded, Replacement
from jaxfix.fixes.hoist import (
    binds_with_walrus,
    moves_with,
    reordered_dict,
    values_of,
)
from jaxfix.fixes.syntax import calls_in, names_read
from jaxfix.fixes.tracing import Statement, TracedAnalysis
from jaxfix.models.diagnostic import Diagnostic
from jaxfix.models.transforms import HOST_CALLBACKS, JIT


@dataclass(frozen=True)
class AfterCall:
    """The edits of the function and of its call sites, and the imports they need."""

    replacements: Mapping[cst.CSTNode, Replacement]
    imports: tuple[ImportNeeded, ...]


def plan_after_call(
    analysis: TracedAnalysis,
    group: Sequence[Statement],
    wrapping: Wrapping,
    rule: str,
    publish: bool = False,
) -> AfterCall | str:
    """The move of `group` (statements of one jitted function, in order, findings of `rule`)
    to after each call of the function, or why it cannot be made. With `publish`, `group` is
    every statement of the function that moves (`FunctionMoves`), and a run over a project
    hears of the move (`EffectAfterCall`): other modules that import the function rewrite
    their calls too, or tell why they cannot (`Options.foreign_calls`); without, it only
    says whether `group` could move."""
    function = analysis.owner_function(group[0])
    context = analysis.functions.get(function) if function is not None else None
    if not isinstance(function, cst.FunctionDef) or context is None:
        return "it is not in a function"
    jitted = all(r.via is Via.DECORATED and r.name == JIT for r in context.reasons)
    differentiated = all(r.via is Via.PASSED and r.name in AUX_TRANSFORMS for r in context.reasons)
    scanned = all(r.via is Via.PASSED and r.name == SCAN for r in context.reasons)
    if not (jitted or differentiated or scanned):
        return (
            "the function is traced other than by its `@jax.jit` decorator, `jax.grad` or"
            " `lax.scan`"
        )
    body = list(function.body.body) if isinstance(function.body, cst.IndentedBlock) else []
    if not all(any(member is s for s in body) for member in group):
        return "it runs in a branch or a loop of the function"
    if any(binds_with_walrus(member) for member in group):
        return "it binds a name with `:=` (the binding would leave the function)"
    if _runs_callbacks(analysis, [s for s in body if not any(s is m for m in group)]):
        return (
            "the function runs host callbacks: moved after them, the statements would change order"
        )
    last = body[-1] if body else None
    returned = returned_value(last)
    if returned is None or count_returns(function.body) != 1:
        return "the function does not return once, at its end"
    payloads = _payloads(analysis, group)
    if isinstance(payloads, str):
        return payloads
    why = _reads_only_module_names(analysis, function, group, payloads)
    if why:
        return why
    reordered = next((p for p in payloads if reordered_dict(analysis, group, p)), None)
    if reordered is not None:  # returned, a dict's keys come back sorted
        return f"`{reordered}` is a dict whose keys are not in sorted order"
    sites: Sequence[cst.Call | AuxSite | ScanSite] | str
    if jitted:
        sites = call_sites(analysis, function)
    elif differentiated:
        sites = aux_sites(analysis, function)
    else:
        sites = scan_sites(analysis, function)
        if not isinstance(returned, cst.Tuple) or len(returned.elements) != 2:
            return "the scanned function does not return `carry, y`"
        tree = next((p for p in payloads if not _an_array(analysis, function, p)), None)
        if tree is not None:  # stacked, a dict's iterations would be its keys
            return f"`{tree}` may be a tree of arrays, which the scan stacks leaf by leaf"
    if isinstance(sites, str):
        return sites
    why = callers_outside(function)
    if why:
        return why
    replacements: dict[cst.CSTNode, Replacement] = {
        member: cst.RemovalSentinel.REMOVE for member in group
    }
    assert isinstance(last, cst.SimpleStatementLine) and returned is not None
    names = [cst.Name(p) for p in payloads]
    extra = packed(names)
    if jitted:
        new_return = tuple_of([in_parentheses(returned), *names])
    elif differentiated:  # the auxiliary output (`has_aux=True`)
        new_return = tuple_of([in_parentheses(returned), extra])
    else:  # stacked with what each iteration gives (`carry, (y, h)`)
        assert isinstance(returned, cst.Tuple)
        carry, y = (element.value for element in returned.elements)
        new_return = tuple_of([carry, tuple_of([in_parentheses(y), extra], parenthesized=True)])
    replacements[last] = last.with_changes(body=[cst.Return(new_return)])
    imports: list[ImportNeeded] = []
    for site in sites:
        if isinstance(site, AuxSite):
            rewritten = rewrite_aux_site(analysis, site, group, payloads, wrapping, imports)
        elif isinstance(site, ScanSite):
            rewritten = rewrite_scan_site(analysis, site, group, payloads, wrapping, imports)
        else:
            rewritten = rewrite_site(analysis, site, group, payloads, wrapping, imports)
        if isinstance(rewritten, str):
            return rewritten
        replacements.update(rewritten)
    facts = analysis.project.facts
    if publish and jitted and facts is not None:  # a run over a project: others may import it
        published = _published(analysis, function, group, payloads, wrapping, rule)
        if published is None:  # its importers, if any, tell the run that they cannot change
            why = "a name its host statements read cannot be imported where it is called"
            published = EffectAfterCall(function.name.value, rule, "", (), why_not=why)
        facts.return_changes.append(published.change())
    if publish and not sites and not _called_elsewhere(analysis, function):
        # Moved out, the statements would run nowhere: the run hears of the move first, and
        # tells this module again when other modules call the function (and can change).
        return f"`{function.name.value}` is called nowhere in view"
    return AfterCall(replacements, tuple(dict.fromkeys(imports)))


@dataclass(frozen=True)
class _Joined:
    """Statements that move together (`group`), the rule that found them, the fix it
    reported them with until the move is planned, and the fix it makes without the move."""

    group: Sequence[Statement]
    wrapping: Wrapping
    rule: FixingRule
    placeholder: Fix
    fallback: Callable[[], Fix | str]


def _called_elsewhere(analysis: TracedAnalysis, function: cst.FunctionDef) -> bool:
    """Whether the run told that other modules call `function` and all can change."""
    name = function.name.value
    return any(
        c.function == name and not c.why_not and not c.keeps_return
        for c in analysis.project.foreign_calls
    )


class FunctionMoves:
    """Every host statement of one function that a fix takes out of the trace, whichever
    rule found it. They move after the function's calls together, planned once the rules
    have seen the whole file (`finish`): the function gains one set of extra outputs, and
    each call site runs every moved statement once, in its order. When one of them cannot
    move after the calls (it is `blocked`: a host callback, or no fix), none does: each takes
    the fix its rule makes without the move, so that the effects keep their order."""

    def __init__(self, analysis: TracedAnalysis) -> None:
        self.analysis = analysis
        self.joined: list[_Joined] = []
        self.blocked = False

    @classmethod
    def of(cls, analysis: TracedAnalysis, statement: Statement) -> FunctionMoves:
        """The moves of the function whose body holds `statement`."""
        key = (cls, analysis.owner_function(statement))
        moves = analysis.fix_plans.get(key)
        if moves is None:
            moves = analysis.fix_plans[key] = cls(analysis)
            analysis.finishing.append(moves.finish)
        assert isinstance(moves, FunctionMoves)
        return moves

    def join(
        self,
        group: Sequence[Statement],
        wrapping: Wrapping,
        rule: FixingRule,
        fallback: Callable[[], Fix | str],
    ) -> Fix:
        """The fix to report `group` with (its edits are known at `finish`)."""
        placeholder = rule.make_fix({}, title=rule.after_call_title)
        self.joined.append(_Joined(group, wrapping, rule, placeholder, fallback))
        return placeholder

    def finish(self) -> None:
        """Plan the move of every statement joined, in their order in the function, and give
        each finding its fix."""
        fixes: dict[int, Fix | None] = {}
        moved = self._planned() if self.joined and not self.blocked else None
        for joined in self.joined:
            if moved is None:
                fallback = joined.fallback()
                fixes[id(joined.placeholder)] = fallback if isinstance(fallback, Fix) else None
            else:
                fixes[id(joined.placeholder)] = moved
        for rule in {id(joined.rule): joined.rule for joined in self.joined}.values():
            rule.diagnostics[:] = [_with_fix(d, fixes) for d in rule.diagnostics]

    def _planned(self) -> Fix | None:
        analysis = self.analysis
        wrappings = {m: joined.wrapping for joined in self.joined for m in joined.group}
        members = sorted(wrappings, key=analysis.position)
        rule = self.joined[0].rule
        after = plan_after_call(
            analysis, members, lambda m, jax: wrappings[m](m, jax), rule.code, publish=True
        )
        if isinstance(after, str):
            return None
        fix = rule.make_fix(
            after.replacements, after.imports, removed_nodes=members, title=rule.after_call_title
        )
        function = analysis.owner_function(members[0])
        assert isinstance(function, cst.FunctionDef)
        return dataclasses.replace(fix, moves=function.name.value)


def _with_fix(diagnostic: Diagnostic, fixes: Mapping[int, Fix | None]) -> Diagnostic:
    """`diagnostic` with the fix that replaces its placeholder (see `FunctionMoves`)."""
    if diagnostic.fix is None or id(diagnostic.fix) not in fixes:
        return diagnostic
    fix = fixes[id(diagnostic.fix)]
    if fix is not None and diagnostic.part_of:  # the placeholder was part of another's fix
        fix = dataclasses.replace(fix, part_of=diagnostic.part_of)
    return diagnostic.with_fix(fix)


def _an_array(analysis: TracedAnalysis, function: cst.FunctionDef, name: str) -> bool:
    """Whether every value the function gives `name` is an array, as its code shows: an
    operation on arrays, or what a `jax` function returns (not a dict, a tuple, or what the
    program's own function makes)."""
    return all(_array_valued(analysis, v) for v in values_of(function, name))


def _array_valued(analysis: TracedAnalysis, value: cst.BaseExpression) -> bool:
    if isinstance(value, cst.BinaryOperation | cst.UnaryOperation | cst.Name | cst.Subscript):
        return True
    if isinstance(value, cst.Call):
        return any(n.split(".")[0] == "jax" for n in analysis.imported_names(value.func))
    return False


# What runs on the host while the function runs: a statement moved after its calls would
# run after these, not in its place among them.
_HOST_EFFECTS = HOST_CALLBACKS | {"jax.debug.print"}


def _runs_callbacks(analysis: TracedAnalysis, statements: Sequence[cst.CSTNode]) -> bool:
    """Whether one of `statements` calls a host callback or `jax.debug.print`, or a function
    that runs one: a function of the module whose host statements a fix moves out of the
    trace, or one another module's fix makes run host callbacks (`WAITS`)."""
    waiting = {
        imported.name.rsplit(".", 1)[-1]
        for imported in analysis.project.changed_imports
        if WAITS in dict(imported.returned.details)
    }
    moving = {
        key[1].name.value
        for key in analysis.fix_plans
        if isinstance(key, tuple)
        and key[0] is FunctionMoves
        and isinstance(key[1], cst.FunctionDef)
    }
    for statement in statements:
        for call in calls_in(statement):
            if analysis.imported_names(call.func) & _HOST_EFFECTS:
                return True
            func = call.func
            name = func.value if isinstance(func, cst.Name) else None
            name = func.attr.value if isinstance(func, cst.Attribute) else name
            if name is not None and (name in waiting or name in moving):
                return True
    return False


def _published(
    analysis: TracedAnalysis,
    function: cst.FunctionDef,
    group: Sequence[Statement],
    payloads: Sequence[str],
    wrapping: Wrapping,
    rule: str,
) -> EffectAfterCall | None:
    """What other modules' call sites must run, in their own names; None when a name the
    statements read cannot be imported as it is (an alias, a relative import)."""
    if assigned_globals(analysis, group):
        return None  # another module's `LAST = h` would bind its own name, not this one's
    names: dict[str, tuple[str, str, str | None]] = {}
    for member in group:
        for node in names_read(member):
            if node.value in payloads or node.value in names:
                continue
            scope = analysis.scope_of(node)
            found = list(scope[node.value]) if scope is not None else []
            if all(isinstance(a, BuiltinAssignment) for a in found):
                continue
            origin = origin_of(node.value, found)
            if origin is None:
                return None
            names[node.value] = origin
    renamed = {p: PAYLOAD.format(i) for i, p in enumerate(payloads)}
    code = "".join(
        cst.Module([]).code_for_node(on_host(member, renamed, wrapping, JAX)) for member in group
    )
    return EffectAfterCall(function.name.value, rule, code, tuple(payloads), tuple(names.values()))


def _payloads(analysis: TracedAnalysis, group: Sequence[Statement]) -> list[str] | str:
    """The names of the traced values the statements read, each bound before the first
    statement that reads it and not rebound after: the function's last value of it, returned,
    is the one they read."""
    names: list[str] = []
    for member in group:
        line = analysis.line_of(member)
        for node in names_read(member):
            if node.value in names or not analysis.is_traced(node):
                continue
            scope = analysis.scope_of(node)
            if scope is not None and moves_with(analysis, scope, group):
                continue  # a parameter of a lambda that moves too (`lambda leaf: ...`)
            bound = list(scope[node.value]) if scope is not None else []
            if any(isinstance(a, Assignment) and analysis.line_of(a.node) > line for a in bound):
                return f"`{node.value}` is bound again after it"
            names.append(node.value)
    return names


def _reads_only_module_names(
    analysis: TracedAnalysis,
    function: cst.FunctionDef,
    group: Sequence[Statement],
    payloads: Sequence[str],
) -> str:
    """Why the statements cannot run at a call site: they read a local of the function other
    than the values they are given ("" when they can)."""
    for member in group:
        for name in names_read(member):
            if name.value in payloads:
                continue
            scope = analysis.scope_of(name)
            for assignment in scope[name.value] if scope is not None else ():
                if isinstance(assignment, BuiltinAssignment) or isinstance(
                    assignment.scope, GlobalScope
                ):
                    continue
                if isinstance(assignment, Assignment) and any(
                    analysis.inside(assignment.node, m) for m in group
                ):
                    continue  # bound by the statements themselves (`with open(...) as f`)
                return f"it reads `{name.value}`, a local of `{function.name.value}`"
    return ""
