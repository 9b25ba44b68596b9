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

Otherwise the caller's rule falls back to a host callback (`jaxfix.fixes.host_effects`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import libcst as cst
from libcst.metadata import Assignment, BuiltinAssignment, GlobalScope, ImportAssignment

from jaxfix.analysis.project import WAITS, ChangedImport, ReturnChange
from jaxfix.analysis.reasons import Via
from jaxfix.fixes.call_sites import (
    AUX_TRANSFORMS,
    SCAN,
    AuxSite,
    ScanSite,
    alone,
    assigned,
    aux_sites,
    call_sites,
    callers_outside,
    count_returns,
    scan_sites,
)
from jaxfix.fixes.fix import Fix, FixingRule, ImportNeeded, Replacement
from jaxfix.fixes.hoist import (
    binds_with_walrus,
    jax_module_name,
    moves_with,
    reordered_dict,
    values_of,
)
from jaxfix.fixes.syntax import calls_in
from jaxfix.fixes.tracing import Statement, TracedAnalysis, names_read
from jaxfix.models.diagnostic import Diagnostic
from jaxfix.models.transforms import HOST_CALLBACKS, JIT

# What to wrap in a moving statement (`y` -> `jax.device_get(y)`), given the name of `jax`.
Wrapping = Callable[[Statement, str], Mapping[cst.BaseExpression, cst.BaseExpression]]
# In `EffectAfterCall.code`: the i-th payload, and the caller's name of `jax`.
PAYLOAD = "__jaxfix_payload_{}__"
JAX = "__jaxfix_jax__"


@dataclass(frozen=True)
class EffectAfterCall:
    """A function of a module whose host statements move after each of its calls: it will
    return `payloads` too, and each call site runs `code` on them. In `code`,
    `PAYLOAD.format(i)` stands for the i-th payload and `JAX` for the caller's name of `jax`;
    `names` are the module-level names it reads, each with the import that binds it in a
    caller ((name, module, obj); module "" for the defining module itself). Other modules
    hear of it as a `ReturnChange` of the finding's rule."""

    function: str
    rule: str
    code: str
    payloads: tuple[str, ...]
    names: tuple[tuple[str, str, str | None], ...] = ()
    why_not: str = ""

    def change(self) -> ReturnChange:
        details = (("code", self.code), ("payloads", self.payloads), ("names", self.names))
        return ReturnChange(self.function, self.rule, details, self.why_not)

    @classmethod
    def of(cls, change: ReturnChange) -> EffectAfterCall:
        return cls(
            change.function,
            change.rule,
            change.detail("code"),
            change.detail("payloads"),
            change.detail("names"),
            change.why_not,
        )


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
    returned = _returned(last)
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
    extra = _packed(names)
    if jitted:
        new_return = _tuple([_parenthesized(returned), *names])
    elif differentiated:  # the auxiliary output (`has_aux=True`)
        new_return = _tuple([_parenthesized(returned), extra])
    else:  # stacked with what each iteration gives (`carry, (y, h)`)
        assert isinstance(returned, cst.Tuple)
        carry, y = (element.value for element in returned.elements)
        new_return = _tuple([carry, _tuple([_parenthesized(y), extra], parenthesized=True)])
    replacements[last] = last.with_changes(body=[cst.Return(new_return)])
    imports: list[ImportNeeded] = []
    for site in sites:
        if isinstance(site, AuxSite):
            rewritten = _rewrite_aux_site(analysis, site, group, payloads, wrapping, imports)
        elif isinstance(site, ScanSite):
            rewritten = _rewrite_scan_site(analysis, site, group, payloads, wrapping, imports)
        else:
            rewritten = _rewrite_site(analysis, site, group, payloads, wrapping, imports)
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
    return diagnostic.with_fix(fixes[id(diagnostic.fix)])


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


def _packed(names: Sequence[cst.Name]) -> cst.BaseExpression:
    """One name as it is, several as `(a, b)`: the extra values as one output."""
    return names[0] if len(names) == 1 else _tuple(names, parenthesized=True)


def _tuple(values: Sequence[cst.BaseExpression], parenthesized: bool = False) -> cst.Tuple:
    """`a, b` (`(a, b)` when `parenthesized`)."""
    elements = [cst.Element(v) for v in values]
    return cst.Tuple(elements) if parenthesized else cst.Tuple(elements, lpar=[], rpar=[])


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
    if _assigned_globals(analysis, group):
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
            origin = _origin(node.value, found)
            if origin is None:
                return None
            names[node.value] = origin
    renamed = {p: PAYLOAD.format(i) for i, p in enumerate(payloads)}
    code = "".join(
        cst.Module([]).code_for_node(_on_host(member, renamed, wrapping, JAX)) for member in group
    )
    return EffectAfterCall(function.name.value, rule, code, tuple(payloads), tuple(names.values()))


def _assigned_globals(analysis: TracedAnalysis, group: Sequence[Statement]) -> set[str]:
    """The names the statements' function declares `global` that they use (`LAST = h`)."""
    declared = analysis.declared_global(analysis.owner_function(group[0]))
    return {name.value for member in group for name in names_read(member)} & declared


def _origin(name: str, assignments: Sequence[object]) -> tuple[str, str, str | None] | None:
    """How a caller binds module-level `name` as the defining module does: (name, module,
    obj) for `import module` / `from module import obj`, module "" for a name the module
    defines itself."""
    if len(assignments) != 1 or not isinstance(assignments[0], Assignment):
        return None
    node = assignments[0].node
    if isinstance(node, cst.Import):
        alias = next((a for a in node.names if a.evaluated_alias is None), None)
        if alias is None or alias.evaluated_name.split(".")[0] != name:
            return None
        return name, alias.evaluated_name, None
    if isinstance(node, cst.ImportFrom):
        if node.relative or node.module is None or isinstance(node.names, cst.ImportStar):
            return None
        if not any(a.evaluated_name == name and a.asname is None for a in node.names):
            return None
        return name, cst.Module([]).code_for_node(node.module), name
    return name, "", name


def rewrite_imported_sites(rule: FixingRule) -> None:
    """In a module that imports functions whose host statements (`rule`'s findings where they
    are defined) move after their calls: the statements after each call of them."""
    for imported in rule.traced.project.changed_imports:
        if imported.returned.rule == rule.code and "code" in dict(imported.returned.details):
            _rewrite_imported(rule, imported, EffectAfterCall.of(imported.returned))


def _rewrite_imported(rule: FixingRule, imported: ChangedImport, effect: EffectAfterCall) -> None:
    """Reported with the fix when every call site of the run can be rewritten; what the run
    needs to decide is noted."""
    analysis = rule.traced
    replacements: dict[cst.CSTNode, Replacement] = {}
    imports: list[ImportNeeded] = []
    why = ""
    sites: list[cst.Call] = []
    for reference in analysis.references_to([imported.name]):
        site = analysis.parent(reference)
        if not isinstance(site, cst.Call) or site.func is not reference:
            why = f"`{effect.function}` is used as a value in another module"
        elif analysis.context_of(site) is not None:
            why = f"`{effect.function}` is called from traced code in another module"
        else:
            rewritten = _rewrite_imported_site(analysis, site, effect, imported.definer, imports)
            if isinstance(rewritten, str):
                why = rewritten
            else:
                replacements.update(rewritten)
                sites.append(site)
    facts = analysis.project.facts
    if facts is not None:
        facts.call_sites[imported.name] = why
    if why or not imported.allowed or not replacements:
        return
    fix = rule.make_fix(replacements, imports, title=rule.after_call_title)
    fix = dataclasses.replace(fix, part_of=f"{imported.definer}:{effect.function}")
    message = (
        f"`{effect.function}` will return the traced values its host statements need"
        f" ({effect.rule} moves them here from `{imported.definer}`): run them after the call"
    )
    for site in sites:
        rule.report(site, message, fix)


def _rewrite_imported_site(
    analysis: TracedAnalysis,
    site: cst.Call,
    effect: EffectAfterCall,
    definer: str,
    imports: list[ImportNeeded],
) -> dict[cst.CSTNode, Replacement] | str:
    found = _site(analysis, site, imports, JAX in effect.code)
    if isinstance(found, str):
        return found
    line, target, jax_name = found
    scope = analysis.scope_of(site)
    for name, module, obj in effect.names:
        module = module or definer
        bound = list(scope[name]) if scope is not None else []
        if not bound:
            imports.append(ImportNeeded(module, obj))
        elif _origin(name, bound) not in {(name, module, obj)}:
            return f"`{name}` means something else where `{effect.function}` is called"
    if _moved_already(analysis, line, target, effect, jax_name):
        return {}
    free = _fresh_names(analysis, site, effect.payloads)
    code = _code_at_site(effect, jax_name, free)
    moved = cst.parse_module(code).body
    return {line: cst.FlattenSentinel([_unpacking(line, target, site, free), *moved])}


def _code_at_site(effect: EffectAfterCall, jax_name: str, payloads: Sequence[str]) -> str:
    code = effect.code.replace(JAX, jax_name)
    for index, name in enumerate(payloads):
        code = code.replace(PAYLOAD.format(index), name)
    return code


def _moved_already(
    analysis: TracedAnalysis,
    line: cst.SimpleStatementLine,
    target: cst.BaseAssignTargetExpression | None,
    effect: EffectAfterCall,
    jax_name: str,
) -> bool:
    """Whether the call site reads `..., p = f(...)` followed by the statements on `p`: an
    earlier pass of the fix made it so (the call site's finding stays while its module is
    told about the function)."""
    count = len(effect.payloads)
    elements = target.elements if isinstance(target, cst.Tuple) else []
    given = [e.value for e in elements[-count:]] if count and len(elements) > count else []
    names = [n.value for n in given if isinstance(n, cst.Name)]
    if len(names) != count:
        return False
    expected = cst.parse_module(_code_at_site(effect, jax_name, names))
    block = analysis.parent(line)
    body = list(block.body) if isinstance(block, cst.Module | cst.IndentedBlock) else []
    at = next((i for i, statement in enumerate(body) if statement is line), len(body))
    following = body[at + 1 : at + 1 + len(expected.body)]
    code = "".join(
        expected.code_for_node(s.with_changes(leading_lines=()))
        for s in following
        if isinstance(s, cst.SimpleStatementLine | cst.BaseCompoundStatement)
    )
    return code == expected.code


def _returned(last: cst.BaseStatement | None) -> cst.BaseExpression | None:
    if not isinstance(last, cst.SimpleStatementLine) or len(last.body) != 1:
        return None
    small = last.body[0]
    return small.value if isinstance(small, cst.Return) else None


def _parenthesized(value: cst.BaseExpression) -> cst.BaseExpression:
    """`value` as one element of a tuple (`a, b` -> `(a, b)`)."""
    if isinstance(value, cst.Tuple) and not value.lpar:
        return value.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    return value


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


def _rewrite_site(
    analysis: TracedAnalysis,
    site: cst.Call,
    group: Sequence[Statement],
    payloads: Sequence[str],
    wrapping: Wrapping,
    imports: list[ImportNeeded],
) -> dict[cst.CSTNode, Replacement] | str:
    """`target = f(...)` -> `target, p = f(...)` and the statements after it, on `p`."""
    found = _local_site(analysis, site, group, payloads, wrapping, imports)
    if isinstance(found, str):
        return found
    line, target, jax_name = found
    renamed = dict(zip(payloads, _fresh_names(analysis, site, payloads), strict=True))
    call_line = _unpacking(line, target, site, [renamed[p] for p in payloads])
    moved = [_on_host(member, renamed, wrapping, jax_name) for member in group]
    return {line: cst.FlattenSentinel([call_line, *moved])}


def _rewrite_aux_site(
    analysis: TracedAnalysis,
    site: AuxSite,
    group: Sequence[Statement],
    payloads: Sequence[str],
    wrapping: Wrapping,
    imports: list[ImportNeeded],
) -> dict[cst.CSTNode, Replacement] | str:
    """`g = jax.grad(f)(...)` -> `g, p = jax.grad(f, has_aux=True)(...)` (`(v, p), g = ...`
    for `value_and_grad`) and the statements after it, on `p`."""
    found = _local_site(analysis, site.call, group, payloads, wrapping, imports)
    if isinstance(found, str):
        return found
    line, target, jax_name = found
    renamed = dict(zip(payloads, _fresh_names(analysis, site.call, payloads), strict=True))
    names = [cst.Name(renamed[p]) for p in payloads]
    aux = _packed(names)
    if not site.with_value:
        targets = [cst.Name("_") if target is None else _parenthesized(target), aux]
    elif target is None:
        targets = [_tuple([cst.Name("_"), aux], parenthesized=True), cst.Name("_")]
    elif isinstance(target, cst.Tuple) and len(target.elements) == 2:
        value, grad = (e.value for e in target.elements)
        targets = [_tuple([_parenthesized(value), aux], parenthesized=True), grad]
    else:
        return "the result of `jax.value_and_grad(...)(...)` is not unpacked as `value, grad`"
    tight = cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace(""))
    has_aux = cst.Arg(cst.Name("True"), keyword=cst.Name("has_aux"), equal=tight)
    transform = site.transform.with_changes(args=[*site.transform.args, has_aux])
    call = site.call.with_changes(func=transform)
    assign = cst.Assign([cst.AssignTarget(_tuple(targets))], call)
    moved = [_on_host(member, renamed, wrapping, jax_name) for member in group]
    return {line: cst.FlattenSentinel([line.with_changes(body=[assign]), *moved])}


def _rewrite_scan_site(
    analysis: TracedAnalysis,
    site: ScanSite,
    group: Sequence[Statement],
    payloads: Sequence[str],
    wrapping: Wrapping,
    imports: list[ImportNeeded],
) -> dict[cst.CSTNode, Replacement] | str:
    """`c, ys = lax.scan(f, ...)` -> `c, (ys, hs) = lax.scan(f, ...)` and the statements in
    `for h in hs:`, once per iteration, in the order the iterations ran."""
    found = _local_site(analysis, site.call, group, payloads, wrapping, imports)
    if isinstance(found, str):
        return found
    line, target, jax_name = found
    scope = analysis.scope_of(site.call)
    shadowed = scope is not None and any(not isinstance(a, BuiltinAssignment) for a in scope["zip"])
    if len(payloads) > 1 and shadowed:
        return "`zip` means something else where the function is scanned"
    fresh = _fresh_names(analysis, site.call, [*payloads, *(f"{p}s" for p in payloads)])
    each = dict(zip(payloads, fresh[: len(payloads)], strict=True))
    stacked = [cst.Name(n) for n in fresh[len(payloads) :]]
    extra = _packed(stacked)
    targets: list[cst.BaseExpression]
    if target is None:
        targets = [cst.Name("_"), _tuple([cst.Name("_"), extra], parenthesized=True)]
    elif isinstance(target, cst.Tuple) and len(target.elements) == 2:
        carry, ys = (e.value for e in target.elements)
        targets = [carry, _tuple([_parenthesized(ys), extra], parenthesized=True)]
    else:
        return "the result of `lax.scan(...)` is not unpacked as `carry, ys`"
    assign = cst.Assign([cst.AssignTarget(_tuple(targets))], site.call)
    names = [cst.Name(each[p]) for p in payloads]
    loop = cst.For(
        target=names[0] if len(names) == 1 else _tuple(names),
        iter=stacked[0]
        if len(stacked) == 1
        else cst.Call(cst.Name("zip"), [cst.Arg(n) for n in stacked]),
        body=cst.IndentedBlock([_on_host(m, each, wrapping, jax_name) for m in group]),
    )
    return {line: cst.FlattenSentinel([line.with_changes(body=[assign]), loop])}


def _local_site(
    analysis: TracedAnalysis,
    site: cst.Call,
    group: Sequence[Statement],
    payloads: Sequence[str],
    wrapping: Wrapping,
    imports: list[ImportNeeded],
) -> tuple[cst.SimpleStatementLine, cst.BaseAssignTargetExpression | None, str] | str:
    """`_site` for a call site in the function's own module, where the statements' names
    must mean what they mean in the function (see `_means_the_same_at`)."""
    found = _site(analysis, site, imports, _uses_jax(group, wrapping))
    if isinstance(found, str):
        return found
    return _means_the_same_at(analysis, site, group, payloads) or found


def _means_the_same_at(
    analysis: TracedAnalysis, site: cst.Call, group: Sequence[Statement], payloads: Sequence[str]
) -> str:
    """Why a name the statements use means something else at the call site ("" if none)."""
    scope = analysis.scope_of(site)
    assigned = sorted(_assigned_globals(analysis, group))
    if assigned and not isinstance(scope, GlobalScope):
        return (
            f"it assigns the module's `{assigned[0]}`, which a call site in a function would"
            " bind as its own local"
        )
    for member in group:
        for name in names_read(member):
            if name.value in payloads or scope is None:
                continue
            if any(not _module_level(a) for a in scope[name.value]):
                return f"`{name.value}` means something else where the function is called"
    return ""


def _site(
    analysis: TracedAnalysis, site: cst.Call, imports: list[ImportNeeded], uses_jax: bool
) -> tuple[cst.SimpleStatementLine, cst.BaseAssignTargetExpression | None, str] | str:
    """The line of a call site, its target (None for `f(...)` alone) and the name of `jax`
    there (its import added to `imports` if the moved code `uses_jax`); or why it cannot be
    rewritten."""
    line, target = assigned(analysis, site)
    if line is None:
        line, target = alone(analysis, site), None
    if line is None:
        return "a call site is not `target = f(...)` or `f(...)` alone on its line"
    if not uses_jax:
        return line, target, "jax"
    jax_name, needed = jax_module_name(analysis, site)
    if not jax_name:
        return "the name `jax` is taken where the function is called"
    imports.extend(needed)
    return line, target, jax_name


def _uses_jax(group: Sequence[Statement], wrapping: Wrapping) -> bool:
    """Whether the statements read anything through `jax.device_get` at a call site."""
    return any(wrapping(member, "jax") for member in group)


def _unpacking(
    line: cst.SimpleStatementLine,
    target: cst.BaseAssignTargetExpression | None,
    site: cst.Call,
    payloads: Sequence[str],
) -> cst.SimpleStatementLine:
    """`target, p1, ... = f(...)` (`_, p1, ...` for a call alone on its line)."""
    given = cst.Name("_") if target is None else _parenthesized(target)
    targets = [given, *map(cst.Name, payloads)]
    unpack = cst.Tuple([cst.Element(t) for t in targets], lpar=[], rpar=[])
    return line.with_changes(body=[cst.Assign([cst.AssignTarget(unpack)], site)])


def _module_level(assignment: object) -> bool:
    return isinstance(assignment, BuiltinAssignment | ImportAssignment) or (
        isinstance(assignment, Assignment) and isinstance(assignment.scope, GlobalScope)
    )


def _fresh_names(analysis: TracedAnalysis, site: cst.Call, bases: Sequence[str]) -> list[str]:
    """For each of `bases`, it or a variant (`h_2`), unbound where `site` is and none twice."""
    scope = analysis.scope_of(site)
    names: list[str] = []
    for base in bases:
        candidate, number = base, 1
        while (scope is not None and scope[candidate]) or candidate in names:
            number += 1
            candidate = f"{base}_{number}"
        names.append(candidate)
    return names


def _on_host(
    member: Statement, renamed: Mapping[str, str], wrapping: Wrapping, jax_name: str
) -> Statement:
    """`member` at a call site: each value it is given read from the call's extra output
    (`jax.device_get(h)` where the rule wraps it), without the lines above it."""
    wrapped: set[cst.CSTNode] = set(wrapping(member, jax_name))
    moved = member.visit(_Payloads(renamed, wrapped, jax_name))
    assert isinstance(moved, cst.SimpleStatementLine | cst.BaseCompoundStatement)
    return moved.with_changes(leading_lines=())


class _Payloads(cst.CSTTransformer):
    """The payloads renamed, and what the rule wraps (`pickle.dumps(h)`'s `h`) read through
    `jax.device_get`."""

    def __init__(
        self, renamed: Mapping[str, str], wrapped: set[cst.CSTNode], jax_name: str
    ) -> None:
        super().__init__()
        self.renamed = renamed
        self.wrapped = wrapped
        self.jax_name = jax_name

    def on_leave(  # type: ignore[override]
        self, original_node: cst.CSTNode, updated_node: cst.CSTNode
    ) -> cst.CSTNode:
        if isinstance(updated_node, cst.Name) and updated_node.value in self.renamed:
            updated_node = updated_node.with_changes(value=self.renamed[updated_node.value])
        if original_node not in self.wrapped:
            return updated_node
        host = cst.parse_expression(f"{self.jax_name}.device_get(x)")
        assert isinstance(host, cst.Call) and isinstance(updated_node, cst.BaseExpression)
        return host.with_changes(args=[cst.Arg(updated_node)])
