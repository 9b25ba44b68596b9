"""A host callback that races with nothing: the hoist of JF101 and JF103, planned whole.

When every call site of the function is in view, the statement moves after the call instead
(`jaxfix.fixes.after_call`): deterministic on every backend, no callback at all. Otherwise:

A statement moved into `jax.debug.callback(..., ordered=True)` runs when the compiled function
executes; on an accelerator that is after the call has returned. So the plan:

- moves with the statement the later statements of the traced function that use what it
  writes (`os.replace(tmp, path)` after the dump into `tmp`): they ran at trace time, before the
  callback; when one cannot move, nothing moves;
- puts `jax.effects_barrier()` before the first host statement that reads what it writes after
  code that may run the traced function (`jaxfix.analysis.effects`); when such a read cannot
  be made to wait, or what it writes is not known, there is no fix: better none than a race;
- tells the run what the callback writes (`WAITS`), when the function is a module's: each
  other module of the run that calls it puts its barriers before its own reads, as a part of
  the same fix (`wait_in_importers`), or tells why it cannot, and then there is no fix.
"""

from __future__ import annotations

import dataclasses
import inspect
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar, cast

import libcst as cst
from libcst.metadata import GlobalScope

from jaxfix.analysis.effects import Keys
from jaxfix.analysis.project import ORIGIN, WAITS, ModuleFacts, ReturnChange
from jaxfix.fixes.after_call import AfterCall, FunctionMoves, plan_after_call
from jaxfix.fixes.after_call_sites import Wrapping
from jaxfix.fixes.fix import Fix, FixingRule, ImportNeeded, Replacement
from jaxfix.fixes.hoist import bound_names, fresh_name, hoist_statements, jax_module_name
from jaxfix.fixes.syntax import names_read
from jaxfix.fixes.tracing import Statement, TracedAnalysis

CONSOLE = Keys(console=True)  # what `jax.debug.print` writes
WAIT_TITLE = "Wait for its host callbacks (`jax.effects_barrier()`) before the read"


@dataclass(frozen=True)
class Hoist:
    """The statements a hoist moves, its edits, and the lines of the host reads it makes
    wait."""

    moved: tuple[Statement, ...]
    replacements: Mapping[cst.CSTNode, Replacement]
    imports: tuple[ImportNeeded, ...]
    reads_at: tuple[int, ...]
    keys: Keys  # what the moved statements write

    def title(self, title: str) -> str:
        """A fix title that says where the host waits."""
        if not self.reads_at:
            return title
        lines = [str(n) for n in self.reads_at]
        where = lines[0] if len(lines) == 1 else f"{', '.join(lines[:-1])} and {lines[-1]}"
        s = "s" if len(lines) > 1 else ""
        return f"{title}, with `jax.effects_barrier()` before the read{s} at line{s} {where}"


F = TypeVar("F", bound=Callable[..., Any])


def _weakly(function: F) -> F:
    """`function`, holding its `self` weakly when it is a bound method."""
    if not inspect.ismethod(function):
        return function
    method = weakref.WeakMethod(function)
    return cast(F, lambda *args: cast(F, method())(*args))


class Hoists:
    """A rule's hoists in one file: one fix per statement, shared by the statements that
    move with it, each with a host function name of its own."""

    def __init__(
        self, rule: FixingRule, movable: Callable[[Statement], bool], wrapping: Wrapping
    ) -> None:
        # The rule holds its hoists: holding it (or its methods) back would make a reference
        # cycle, and leave the file's trees to the cycle collector (see `jaxfix.run.collector`).
        self.rule = cast(FixingRule, weakref.proxy(rule))
        self.movable = _weakly(movable)
        self.wrapping = _weakly(wrapping)
        self._fixes: dict[cst.CSTNode, Fix | str] = {}
        self._reserved: list[str] = []

    def fix(self, statement: Statement, base: str) -> Fix | str:
        """The fix that moves `statement` out of the trace: after each call of its function
        with the function's other host statements (`FunctionMoves`), else into a host
        function named after `base`; or why there is none ("" when the statement itself
        cannot move)."""
        if statement in self._fixes:
            return self._fixes[statement]
        traced = self.rule.traced
        moved = _moving_with(traced, statement, self.movable)
        moves = FunctionMoves.of(traced, statement)
        if not isinstance(moved, str) and self.rule.after_call_title is not None:
            after = plan_after_call(traced, moved[0], self.wrapping, self.rule.code)
            if isinstance(after, AfterCall):
                fix = moves.join(
                    moved[0], self.wrapping, self.rule, lambda: self._hoist(statement, base, moved)
                )
                self._fixes.update(dict.fromkeys(moved[0], fix))
                return fix
        moves.blocked = True
        return self._hoist(statement, base, moved)

    def _hoist(
        self, statement: Statement, base: str, moved: tuple[list[Statement], Keys] | str
    ) -> Fix | str:
        """The fix that moves `statement` (and `moved`) into a host callback."""
        traced = self.rule.traced
        host_name = fresh_name(traced, base, self._reserved)
        planned = plan_hoist(traced, statement, moved, self.wrapping, host_name)
        fix = self._made(statement, planned, self.rule.hoist_title or self.rule.fix_title)
        if isinstance(fix, Fix):
            self._reserved.append(host_name)
        return fix

    def printed(
        self,
        statement: Statement,
        replacements: Mapping[cst.CSTNode, Replacement],
        imports: Sequence[ImportNeeded],
        title: str,
    ) -> Fix | str:
        """The fix that rewrites `statement` in place to print when the compiled function runs
        (`jax.debug.print`): on an accelerator after the call has returned, so the host's
        later lines on the console wait for it, in this module and the others of the run."""
        planned = with_waits(self.rule.traced, [statement], CONSOLE, replacements, imports)
        # Why not is not remembered for the statement: the rule may still hoist it (`fix`).
        return planned if isinstance(planned, str) else self._made(statement, planned, title)

    def _made(self, statement: Statement, planned: Hoist | str, title: str) -> Fix | str:
        """The fix of a plan, with the waits of the other modules that call its function."""
        why, moves = (
            ("", "") if isinstance(planned, str) else _waits(self.rule.traced, planned, self.rule)
        )
        if why:
            planned = why
        if isinstance(planned, str):
            self._fixes[statement] = planned
            return planned
        fix = self.rule.make_fix(planned.replacements, planned.imports, title=planned.title(title))
        fix = dataclasses.replace(fix, moves=moves)
        self._fixes.update(dict.fromkeys(planned.moved, fix))
        return fix


def _waits(analysis: TracedAnalysis, hoist: Hoist, rule: FixingRule) -> tuple[str, str]:
    """Why the modules of the run that call the hoist's function cannot wait for what its
    callback writes ("" when they can), and the function whose calls there wait ("" when no
    other module can call it). The run hears of what the callback writes (`WAITS`), for the
    function and for every module-level function that runs it (`step` that scans `_body`),
    and each module that calls one puts its barriers with the fix (`wait_in_importers`)."""
    function = analysis.owner_function(hoist.moved[0])
    if not isinstance(function, cst.FunctionDef):
        return "", ""
    if not isinstance(analysis.scope_of(function), GlobalScope):
        return "", ""  # no other module can call it by name
    name = function.name.value
    names = {name} | analysis.runners_of(function)
    foreign = analysis.project.foreign_calls
    told = next((c.why_not for c in foreign if c.function in names and c.keeps_return), "")
    if told:
        return f"another module reads what it writes and cannot wait: {told}", ""
    facts = analysis.project.facts
    if facts is None:  # nobody listens (an editor's buffer): the run has told the importers
        return "", name
    if not publish_waits(facts, name, hoist.keys, rule.code, f":{name}"):
        return "", ""  # its return changes: the calls elsewhere change with it
    for runner in sorted(names - {name}):
        publish_waits(facts, runner, hoist.keys, rule.code, f":{name}")
    return "", name


def publish_waits(facts: ModuleFacts, function: str, keys: Keys, rule: str, origin: str) -> bool:
    """Tell the run that calling `function` runs host callbacks that write `keys`, for the fix
    of `origin` (`module:function`; `:function` for this module's): the keys join those told
    already for it (a move after the calls that cannot be made gives way). False, telling
    nothing, when a fix changes what the function returns: its calls change with it."""
    known = [r for r in facts.return_changes if r.function == function]
    if any(WAITS not in dict(r.details) and not r.why_not for r in known):
        return False
    for change in known:
        facts.return_changes.remove(change)
        if WAITS in dict(change.details):
            keys = keys | _keys_of(change)
            rule, origin = change.rule, change.detail(ORIGIN)
    details = ((WAITS, keys.plain()), (ORIGIN, origin))
    facts.return_changes.append(ReturnChange(function, rule, details, keeps_return=True))
    return True


def _keys_of(change: ReturnChange) -> Keys:
    return Keys.from_plain(change.detail(WAITS))


def wait_in_importers(rule: FixingRule) -> None:
    """In a module that imports functions whose statements a fix moves into host callbacks
    (`WAITS`): a `jax.effects_barrier()` before the first read of what they write after each
    call, reported as a part of that fix when the run allows it; why not, noted for the run."""
    analysis = rule.traced
    facts = analysis.project.facts
    for imported in analysis.project.changed_imports:
        if imported.returned.rule != rule.code or WAITS not in dict(imported.returned.details):
            continue
        keys = _keys_of(imported.returned)
        origin = imported.returned.transaction(imported.definer)
        called = imported.name.rsplit(".", 1)[-1]  # `step` of `steps.step`
        planned = _barriers_for(analysis, called, keys)
        if facts is not None:
            facts.call_sites[imported.name] = planned if isinstance(planned, str) else ""
            for runner in analysis.runners_of(called):
                publish_waits(facts, runner, keys, rule.code, origin)  # its callers wait too
        if planned is None or isinstance(planned, str) or not imported.allowed:
            continue
        replacements, imports, first = planned
        fix = rule.make_fix(replacements, imports, title=WAIT_TITLE)
        fix = dataclasses.replace(fix, part_of=origin)
        message = (
            f"`{imported.returned.function}` runs host callbacks ({rule.code} moves statements"
            f" there for `{origin}`): wait for them before the read"
        )
        rule.report(first, message, fix)


def _barriers_for(
    analysis: TracedAnalysis, name: str, keys: Keys
) -> tuple[dict[cst.CSTNode, Replacement], list[ImportNeeded], Statement] | str | None:
    """The barriers this module needs before its reads of `keys` (what the callbacks of the
    function it calls as `name` write), with their imports and the first place; None when it
    reads none of it after a call; or why it cannot wait."""
    # The module sees the function's globals as `module.NAME`, or `NAME` imported.
    seen = dataclasses.replace(keys, attributes=keys.attributes | keys.names)
    reads = analysis.imported_host_reads(name, seen)
    if reads is None:
        return "a read of what it writes is not a statement of a block"
    if reads.blocked is not None:
        return f"a read at line {reads.blocked} is in the statement that runs it"
    replacements: dict[cst.CSTNode, Replacement] = {}
    imports: list[ImportNeeded] = []
    for place in reads.before:
        jax_name, more = jax_module_name(analysis, place)
        if not jax_name:
            return f"the name `jax` is taken at line {analysis.line_of(place)}"
        replacements[place] = cst.FlattenSentinel([_barrier(jax_name, place), _bare(place)])
        imports += more
    if not reads.before:
        return None
    analysis.plan_barriers(reads)
    return replacements, imports, reads.before[0]


def plan_hoist(
    analysis: TracedAnalysis,
    statement: Statement,
    moved: tuple[list[Statement], Keys] | str,
    wrapping: Wrapping,
    host_name: str,
) -> Hoist | str:
    """The hoist of `statement` of a traced function with the statements that move with it
    (`moved`, or why they cannot), or why there is none ("" when the statement itself cannot
    move)."""
    jax_name, imports = jax_module_name(analysis, statement)
    if not jax_name:
        return ""
    if isinstance(moved, str):
        return moved
    group, keys = moved
    payloads = {old: new for member in group for old, new in wrapping(member, jax_name).items()}
    hoisted = hoist_statements(analysis, group, payloads, host_name, jax_name)
    if hoisted is None:
        return ""
    replacements: dict[cst.CSTNode, Replacement] = {statement: cst.FlattenSentinel(hoisted)}
    replacements.update((member, cst.RemovalSentinel.REMOVE) for member in group[1:])
    return with_waits(analysis, group, keys, replacements, imports)


def with_waits(
    analysis: TracedAnalysis,
    group: Sequence[Statement],
    keys: Keys,
    replacements: Mapping[cst.CSTNode, Replacement],
    imports: Sequence[ImportNeeded],
) -> Hoist | str:
    """The edits that leave `group` (statements of a traced function, in order) to run on
    the host when the compiled function runs, writing `keys`, plus a `jax.effects_barrier()`
    before each first read of them in this module's host code after a call; or why the host
    cannot wait there."""
    reads = analysis.host_reads(group[0], keys)
    if reads is None or reads.blocked is not None:
        where = f" at line {reads.blocked}" if reads is not None else ""
        return f"host code reads what it writes{where} in the statement that runs the traced code"
    edits = dict(replacements)
    needed = list(imports)
    for place in reads.before:
        name, more = jax_module_name(analysis, place)
        if not name or any(analysis.inside(member, place) for member in group):
            line = analysis.line_of(place)
            return f"no `jax.effects_barrier()` can be put before line {line}"
        edits[place] = cst.FlattenSentinel([_barrier(name, place), _bare(place)])
        needed += more
    analysis.plan_barriers(reads)
    return Hoist(tuple(group), edits, tuple(dict.fromkeys(needed)), reads.lines, keys)


def _moving_with(
    analysis: TracedAnalysis, statement: Statement, movable: Callable[[Statement], bool]
) -> tuple[list[Statement], Keys] | str:
    """`statement` and the later statements of its function that use what it writes, in
    order, with what they all write; or why they cannot move together."""
    group = [statement]
    keys = analysis.effect_keys(group)
    while keys is not None:
        users = analysis.later_users(group, keys)
        if users is None:
            break
        new = [user for user in users if user not in group]
        if not new:
            block = analysis.parent(statement)
            if _rebinds_between(analysis, block, group):
                return "a statement between the ones that must move together rebinds a name"
            return group, keys
        for user in new:
            if analysis.parent(user) is not analysis.parent(statement) or not movable(user):
                return f"`{_code(user)}` uses what it writes and cannot move with it"
        group += new
        added = analysis.effect_keys(new)
        keys = keys | added if added is not None else None
    return "what it writes depends on a call site that the file does not show"


def _rebinds_between(
    analysis: TracedAnalysis, block: cst.CSTNode | None, group: list[Statement]
) -> bool:
    """Whether a statement of `block` between the first and the last of `group` binds a name
    one of them reads (the host function, defined at the first, would read the old value, or
    none: a `def` made by an earlier fix)."""
    body = list(block.body) if isinstance(block, cst.IndentedBlock) else []
    at = [i for i, node in enumerate(body) if any(node is member for member in group)]
    between = [body[i] for i in range(at[0], at[-1]) if i not in at] if at else []
    read = {name.value for member in group for name in names_read(member)}
    return any(bound_names(node) & read for node in between)


def _barrier(jax_name: str, place: Statement) -> cst.SimpleStatementLine:
    """`jax.effects_barrier()`, with the blank lines and comments that stood above `place`."""
    call = cst.parse_expression(f"{jax_name}.effects_barrier()")
    return cst.SimpleStatementLine([cst.Expr(call)], leading_lines=place.leading_lines)


def _bare(place: Statement) -> Statement:
    return place.with_changes(leading_lines=())


def _code(statement: Statement) -> str:
    """The first line of `statement`'s code."""
    return cst.Module([]).code_for_node(statement).strip().splitlines()[0]
