"""The call sites of a function whose host statements move after its calls (`after_call`):
each call rewritten to take the function's extra outputs and run the moved statements on them
(also through `has_aux`, scans and other modules' imports), with the payloads the trace
returns and the names they are given."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import libcst as cst
from libcst.metadata import Assignment, BuiltinAssignment, GlobalScope, ImportAssignment

from jaxfix.analysis.project import ChangedImport, ReturnChange
from jaxfix.fixes.call_sites import (
    AuxSite,
    ScanSite,
    alone,
    assigned,
)
from jaxfix.fixes.fix import FixingRule, ImportNeeded, Replacement
from jaxfix.fixes.hoist import (
    jax_module_name,
)
from jaxfix.fixes.syntax import names_read
from jaxfix.fixes.tracing import Statement, TracedAnalysis

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


def packed(names: Sequence[cst.Name]) -> cst.BaseExpression:
    """One name as it is, several as `(a, b)`: the extra values as one output."""
    return names[0] if len(names) == 1 else tuple_of(names, parenthesized=True)


def tuple_of(values: Sequence[cst.BaseExpression], parenthesized: bool = False) -> cst.Tuple:
    """`a, b` (`(a, b)` when `parenthesized`)."""
    elements = [cst.Element(v) for v in values]
    return cst.Tuple(elements) if parenthesized else cst.Tuple(elements, lpar=[], rpar=[])


def assigned_globals(analysis: TracedAnalysis, group: Sequence[Statement]) -> set[str]:
    """The names the statements' function declares `global` that they use (`LAST = h`)."""
    declared = analysis.declared_global(analysis.owner_function(group[0]))
    return {name.value for member in group for name in names_read(member)} & declared


def origin_of(name: str, assignments: Sequence[object]) -> tuple[str, str, str | None] | None:
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
        elif origin_of(name, bound) not in {(name, module, obj)}:
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


def returned_value(last: cst.BaseStatement | None) -> cst.BaseExpression | None:
    if not isinstance(last, cst.SimpleStatementLine) or len(last.body) != 1:
        return None
    small = last.body[0]
    return small.value if isinstance(small, cst.Return) else None


def in_parentheses(value: cst.BaseExpression) -> cst.BaseExpression:
    """`value` as one element of a tuple (`a, b` -> `(a, b)`)."""
    if isinstance(value, cst.Tuple) and not value.lpar:
        return value.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    return value


def rewrite_site(
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
    moved = [on_host(member, renamed, wrapping, jax_name) for member in group]
    return {line: cst.FlattenSentinel([call_line, *moved])}


def rewrite_aux_site(
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
    aux = packed(names)
    if not site.with_value:
        targets = [cst.Name("_") if target is None else in_parentheses(target), aux]
    elif target is None:
        targets = [tuple_of([cst.Name("_"), aux], parenthesized=True), cst.Name("_")]
    elif isinstance(target, cst.Tuple) and len(target.elements) == 2:
        value, grad = (e.value for e in target.elements)
        targets = [tuple_of([in_parentheses(value), aux], parenthesized=True), grad]
    else:
        return "the result of `jax.value_and_grad(...)(...)` is not unpacked as `value, grad`"
    tight = cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace(""))
    has_aux = cst.Arg(cst.Name("True"), keyword=cst.Name("has_aux"), equal=tight)
    transform = site.transform.with_changes(args=[*site.transform.args, has_aux])
    call = site.call.with_changes(func=transform)
    assign = cst.Assign([cst.AssignTarget(tuple_of(targets))], call)
    moved = [on_host(member, renamed, wrapping, jax_name) for member in group]
    return {line: cst.FlattenSentinel([line.with_changes(body=[assign]), *moved])}


def rewrite_scan_site(
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
    extra = packed(stacked)
    targets: list[cst.BaseExpression]
    if target is None:
        targets = [cst.Name("_"), tuple_of([cst.Name("_"), extra], parenthesized=True)]
    elif isinstance(target, cst.Tuple) and len(target.elements) == 2:
        carry, ys = (e.value for e in target.elements)
        targets = [carry, tuple_of([in_parentheses(ys), extra], parenthesized=True)]
    else:
        return "the result of `lax.scan(...)` is not unpacked as `carry, ys`"
    assign = cst.Assign([cst.AssignTarget(tuple_of(targets))], site.call)
    names = [cst.Name(each[p]) for p in payloads]
    loop = cst.For(
        target=names[0] if len(names) == 1 else tuple_of(names),
        iter=stacked[0]
        if len(stacked) == 1
        else cst.Call(cst.Name("zip"), [cst.Arg(n) for n in stacked]),
        body=cst.IndentedBlock([on_host(m, each, wrapping, jax_name) for m in group]),
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
    assigned = sorted(assigned_globals(analysis, group))
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
    given = cst.Name("_") if target is None else in_parentheses(target)
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


def on_host(
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
