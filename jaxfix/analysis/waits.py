"""Where host code must wait for host callbacks: the `jax.effects_barrier()`s that a hoist into
`jax.debug.callback` needs (see `jaxfix.analysis.effects` for what the callback writes).

One pass over the host code, statement by statement, tracks whether a callback may be pending:
code that may run the traced function (a call of it, of a function that runs it, of a variable
that may hold it, or a call given it) leaves one pending; a barrier clears it. The first
statement that reads a key while one may be pending gets a barrier. A host function starts with
none pending only when every call site in the file says so (a fixed point; one without a call
site in the file starts unsure). A read in the statement that runs the function cannot wait:
there is no place for a barrier between them.
"""

from __future__ import annotations

import ast
import weakref
from collections import defaultdict
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass, field, replace

from jaxfix.analysis.effects import EffectIndex, Keys, writes_console
from jaxfix.analysis.statements import (
    FUNCTIONS,
    branches,
    call_arguments,
    header,
    inner_statements,
    last_name,
    walk_code,
    walk_statements,
)
from jaxfix.analysis.summaries import FunctionNode, params_of
from jaxfix.models.loggers import LOGGER_METHODS
from jaxfix.models.transforms import RUN_AT_ONCE

BARRIER = "jax.effects_barrier"
_LOOPS = (ast.For, ast.AsyncFor, ast.While)
# The methods whose `self` is an object being made: no callback can have written it yet.
_MAKERS = frozenset({"__init__", "__new__", "__post_init__"})
# Passes over the host code before the functions' starting states settle (each pass can only
# turn some from "none pending" to "unsure").
_MAX_PASSES = 20
# The last names of the calls that may write to the console (`effects.writes_console`).
_CONSOLE_CALLS = LOGGER_METHODS | {"print", "write"}


@dataclass(frozen=True)
class Barriers:
    """Where host code must wait for the callbacks: before `before` (for the reads `reads`),
    or nowhere when `blocked` is the statement at which that cannot be done."""

    before: tuple[ast.stmt, ...] = ()
    reads: tuple[ast.stmt, ...] = ()  # the first read each of them serves
    blocked: ast.stmt | None = None


def barriers(
    index: EffectIndex,
    function: FunctionNode | str,
    keys: Keys,
    planned: Collection[ast.stmt] = (),
) -> Barriers:
    """Where `jax.effects_barrier()` must run for host code that reads `keys` after code that
    may run `function` (a function of the module, or the name the module imports one by:
    `step` for `from pkg.steps import step`, also `steps.step`). `planned`: statements other
    fixes put a barrier before; one of them is used when it stands between the call and the
    read."""
    runners = _runners(index, function, keys)
    owner = index.class_of.get(function) if not isinstance(function, str | ast.Lambda) else None
    entries: dict[str, bool] | None = None  # optimistic at first: a fixed point down
    for _ in range(_MAX_PASSES):
        scan = _Scan(index, keys, runners, entries, planned)
        scan.block(index.tree.body, synced=True)
        for host in index.host_functions:
            words = _words_of(index, host)
            seen = _keys_in(index, host, keys, owner)
            if words.concern(index, seen, runners):
                scan.keys = seen
                scan.block(host.body, synced=scan.entry(host))
                scan.keys = keys
            else:  # nothing in it runs, waits or reads: it only hands its state on
                scan.vote(words.called, scan.entry(host))
        if scan.entries == entries or scan.blocked is not None:
            break
        entries = scan.entries
    return Barriers(
        tuple(dict.fromkeys(scan.before)), tuple(dict.fromkeys(scan.reads)), scan.blocked
    )


def runners_of(index: EffectIndex, function: FunctionNode | str) -> set[str]:
    """The module-level functions whose code may run `function` (a function of the module,
    or the name the module imports one by), through any chain of calls in the module: what
    other modules call to run it."""
    found = _runners(index, function, Keys()).functions
    top = {s.name for s in index.tree.body if isinstance(s, ast.FunctionDef | ast.AsyncFunctionDef)}
    own = function if isinstance(function, str) else getattr(function, "name", "")
    return (found & top) - {own}


def _keys_in(
    index: EffectIndex,
    host: ast.FunctionDef | ast.AsyncFunctionDef,
    keys: Keys,
    owner: str | None,
) -> Keys:
    """What a read of `keys` looks like in `host`: in a method of a class unrelated to
    `owner` (the class whose method's statements the callback runs, writing `self.history`),
    or in one that makes its object (`__init__`), `self.history` is another object's
    attribute, no read of the effect (unless the method reads it of another object too)."""
    cls = index.class_of.get(host)
    if cls is None or not keys.attributes:
        return keys
    fresh = host.name in _MAKERS
    if not fresh and (owner is None or _related(index, cls, owner)):
        return keys
    positional = params_of(host)[1]
    if not positional:
        return keys
    own = positional[0]
    elsewhere = {
        node.attr
        for node in walk_code(host.body)
        if isinstance(node, ast.Attribute)
        and node.attr in keys.attributes
        and not (isinstance(node.value, ast.Name) and node.value.id == own)
    }
    return replace(keys, attributes=frozenset(keys.attributes & elsewhere))


def _related(index: EffectIndex, first: str, second: str) -> bool:
    """Whether one of two classes of the module derives from the other (by base names)."""
    return second in _ancestry(index, first) or first in _ancestry(index, second)


def _ancestry(index: EffectIndex, name: str) -> set[str]:
    """`name` and the names of its bases that the module defines, theirs, and so on (a
    method of a class runs on instances of its subclasses: a class defined elsewhere would
    have to derive from both for two unrelated ones to share `self`)."""
    found, todo = set(), [name]
    while todo:
        current = todo.pop()
        if current in found:
            continue
        found.add(current)
        node = index.module.classes.get(current)
        bases = (last_name(base) for base in node.bases) if node is not None else ()
        todo.extend(b for b in bases if b is not None and b in index.module.classes)
    return found


def _runners(index: EffectIndex, function: FunctionNode | str, keys: Keys) -> _Runners:
    """The names through which host code may run `function`: its own (its class's, for a
    `__call__`), those of the functions whose code runs one, and the variables that may hold
    one (`step = jax.jit(f)`, `model = MLP()`, `opt = optax.chain(make_opt())`)."""
    runners = _Runners(index.class_of)
    if isinstance(function, str):
        runners.functions.add(function)
    elif isinstance(function, FUNCTIONS):
        runners.add_function(function)
    grown = True
    while grown:
        before = len(runners.functions) + len(runners.aliases)
        for node, calls in index.own_calls.items():
            if node.name not in runners.functions and any(map(runners.runs, calls)):
                runners.add_function(node)
        for target, value in index.assigned:
            if target not in keys.names and not _ran(index, value) and runners.holds(value):
                runners.aliases.add(target)
        grown = len(runners.functions) + len(runners.aliases) != before
    return runners


def _ran(index: EffectIndex, value: ast.expr) -> bool:
    """`value` is what a transform that runs its function at once computes (`out =
    lax.fori_loop(0, n, body, x)`): data, not something that runs `body` later."""
    return isinstance(value, ast.Call) and index.module.import_name(value.func) in RUN_AT_ONCE


def _is_barrier(index: EffectIndex, statement: ast.stmt) -> bool:
    """`jax.effects_barrier()` as a statement (through any import of it)."""
    if not isinstance(statement, ast.Expr) or not isinstance(statement.value, ast.Call):
        return False
    return index.module.import_name(statement.value.func) == BARRIER


@dataclass
class Words:
    """What the code of a host function's body mentions (the code the scan walks: not the
    bodies of functions defined in it), to skip the functions that cannot matter. The names
    come from the analysis' walk; the strings are looked for only when a key is a path."""

    names: Collection[str]
    attributes: Collection[str]
    called: frozenset[str]
    body: Sequence[ast.stmt]
    _strings: tuple[str, ...] | None = None

    def concern(self, index: EffectIndex, keys: Keys, runners: _Runners) -> bool:
        """Whether the code may run the traced function, wait for it or read a key."""
        return (
            not keys.names.isdisjoint(self.names)
            or not runners.functions.isdisjoint(self.names)
            or not runners.aliases.isdisjoint(self.names)
            or not keys.attributes.isdisjoint(self.attributes)
            or not runners.functions.isdisjoint(self.attributes)
            or "effects_barrier" in self.attributes
            or any(index.module.imports.get(name) == BARRIER for name in self.names)
            or (bool(keys.paths) and self._mentions_path(keys.paths))
            or (keys.console and not self.called.isdisjoint(_CONSOLE_CALLS))
        )

    def _mentions_path(self, paths: Collection[str]) -> bool:
        if self._strings is None:
            self._strings = tuple(
                n.value
                for n in _scanned_code(self.body)
                if isinstance(n, ast.Constant) and isinstance(n.value, str)
            )
        return any(path in text for path in paths for text in self._strings)


def _words_of(index: EffectIndex, function: ast.FunctionDef | ast.AsyncFunctionDef) -> Words:
    """`Words` of `function`'s body, found once per index."""
    memo = _memo_of(index)
    words = memo.words.get(function)
    if words is None:
        scope = index.scope_of[function]
        called = frozenset(filter(None, (last_name(call.func) for call in scope.calls)))
        words = memo.words[function] = Words(scope.names, scope.attributes, called, function.body)
    return words


def _scanned_code(body: Sequence[ast.stmt]) -> Iterator[ast.AST]:
    """The code `_Scan.block` walks in `body`: each statement's header and the statements
    inside it, not the bodies of the functions it defines."""
    for statement in body:
        yield from walk_code(header(statement))
        if not isinstance(statement, FUNCTIONS):
            yield from _scanned_code(inner_statements(statement))


@dataclass(frozen=True)
class HeaderCode:
    """What runs when a statement starts (`statements.header`), found once per index: its
    calls and the names, attribute names and strings it mentions."""

    barrier: bool
    calls: tuple[ast.Call, ...]
    called: tuple[str, ...]
    names: frozenset[str]
    attributes: frozenset[str]
    strings: tuple[str, ...]
    console: bool  # it writes to the console

    def mentions(self, keys: Keys) -> bool:
        """`keys.seen_in(header(statement))`, from what was found."""
        return (
            not keys.names.isdisjoint(self.names)
            or not keys.attributes.isdisjoint(self.attributes)
            or any(path in text for path in keys.paths for text in self.strings)
            or (keys.console and self.console)
        )


def _header_code(index: EffectIndex, statement: ast.stmt) -> HeaderCode:
    memo = _memo_of(index)
    code = memo.headers.get(statement)
    if code is None:
        nodes = list(walk_code(header(statement)))
        calls = tuple(n for n in nodes if isinstance(n, ast.Call))
        code = memo.headers[statement] = HeaderCode(
            _is_barrier(index, statement),
            calls,
            tuple(filter(None, (last_name(call.func) for call in calls))),
            frozenset(n.id for n in nodes if isinstance(n, ast.Name)),
            frozenset(n.attr for n in nodes if isinstance(n, ast.Attribute)),
            tuple(
                n.value for n in nodes if isinstance(n, ast.Constant) and isinstance(n.value, str)
            ),
            any(map(writes_console, calls)),
        )
    return code


@dataclass
class _Memo:
    """What the scans of one file's host code found once: each host function's `Words`, each
    statement's `HeaderCode`."""

    words: dict[ast.AST, Words] = field(default_factory=dict)
    headers: dict[ast.stmt, HeaderCode] = field(default_factory=dict)


# Held with the index, not in it: the index is the analysis' (it knows nothing of the scans).
_MEMOS: weakref.WeakKeyDictionary[EffectIndex, _Memo] = weakref.WeakKeyDictionary()


def _memo_of(index: EffectIndex) -> _Memo:
    memo = _MEMOS.get(index)
    if memo is None:
        memo = _MEMOS[index] = _Memo()
    return memo


@dataclass
class _Runners:
    """What may run the traced function: functions (by name, classes whose `__call__` does
    among them) and variables that may hold one."""

    class_of: dict[ast.FunctionDef | ast.AsyncFunctionDef, str]  # each method's class
    functions: set[str] = field(default_factory=set)
    aliases: set[str] = field(default_factory=set)
    classes: set[str] = field(default_factory=set)

    def add_function(self, function: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self.functions.add(function.name)
        if function.name == "__call__" and function in self.class_of:
            self.functions.add(self.class_of[function])
            self.classes.add(self.class_of[function])

    def runs(self, call: ast.Call) -> bool:
        """Whether `call` may run it: it calls, or is given, a runner (`step(x)`,
        `jax.vmap(predict)(xs)`, `lax.scan(body, ...)`, `model.apply(...)`), or a lambda that
        calls one."""
        func = call.func
        if self.refers(func) or (isinstance(func, ast.Call) and self.runs(func)):
            return True
        return any(self.refers(g, given=True) or self._runs_in(g) for g in call_arguments(call))

    def _runs_in(self, given: ast.expr) -> bool:
        """A lambda whose body may run it (`jax.vmap(lambda x: model.step(x))`); its
        parameters are its own names."""
        if not isinstance(given, ast.Lambda):
            return False
        params = set(params_of(given)[0])
        inner = replace(self, functions=self.functions - params, aliases=self.aliases - params)
        return any(isinstance(n, ast.Call) and inner.runs(n) for n in walk_code([given.body]))

    def refers(self, node: ast.expr, given: bool = False) -> bool:
        """`node` names a runner: `step`, `obj.step`, `model.apply` of a variable `model` that
        may hold one; a variable itself only when called (given to a call, `float(out)`, it
        is data more often than not)."""
        if isinstance(node, ast.Starred):
            node = node.value
        if isinstance(node, ast.Name):
            return node.id in self.functions or (node.id in self.aliases and not given)
        if isinstance(node, ast.Attribute):
            root = node.value
            return node.attr in self.functions or (
                isinstance(root, ast.Name) and root.id in self.aliases | self.functions
            )
        return False

    def holds(self, value: ast.expr) -> bool:
        """Whether a variable given `value` may hold a runner: a runner itself, an instance
        of a runner class, or what a call that is no runner makes of one (`jax.jit(f)`,
        `hk.transform(f)`) — not what running one returns."""
        if self.refers(value):
            return True
        if not isinstance(value, ast.Call):
            return False
        func = value.func
        if isinstance(func, ast.Name) and func.id in self.classes:
            return True
        running = self.refers(func) or (isinstance(func, ast.Call) and self.runs(func))
        return not running and any(
            (isinstance(n, ast.Call) and self.runs(n)) or self.refers(n, given=True)
            for g in call_arguments(value)
            for n in walk_code([g])
            if isinstance(n, ast.expr)
        )


class _Scan:
    """One pass over the host code: which statements may start with callbacks pending."""

    def __init__(
        self,
        index: EffectIndex,
        keys: Keys,
        runners: _Runners,
        known: dict[str, bool] | None,
        planned: Collection[ast.stmt],
    ) -> None:
        self.index = index
        self.keys = keys
        self.runners = runners
        self.known = known  # the last pass's: whether each function starts with none pending
        self.planned = planned
        self.votes: dict[str, list[bool]] = defaultdict(list)  # by the name called
        self.before: list[ast.stmt] = []
        self.reads: list[ast.stmt] = []
        self.blocked: ast.stmt | None = None

    @property
    def entries(self) -> dict[str, bool]:
        return {name: all(votes) for name, votes in self.votes.items()}

    def entry(self, function: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
        """Whether no callback is pending when `function` starts: every call site in the
        file says so; unsure when it has none (it is called from elsewhere)."""
        if self.known is None:
            return True
        names = [function.name]
        if function.name == "__init__" and function in self.index.class_of:
            names.append(self.index.class_of[function])
        said = [self.known[name] for name in names if name in self.known]
        return bool(said) and all(said)

    def vote(self, called: Collection[str], synced: bool) -> None:
        """Code that calls `called` with `synced` as its state throughout."""
        for name in called:
            self.votes[name].append(synced)

    def block(self, body: Sequence[ast.stmt], synced: bool) -> bool:
        """The state after `body`, entered with `synced`: whether no callback can be pending.
        A barrier another fix plans in the block, after the last call, serves a later read."""
        candidate: ast.stmt | None = None
        for statement in body:
            if not synced and candidate is None and statement in self.planned:
                candidate = statement
            synced, runs = self.statement(statement, synced, candidate)
            if synced or runs or inner_statements(statement):
                candidate = None
        return synced

    def statement(
        self, statement: ast.stmt, synced: bool, candidate: ast.stmt | None
    ) -> tuple[bool, bool]:
        """The state after `statement`, and whether it may run the traced function itself."""
        code = _header_code(self.index, statement)
        if code.barrier:
            return True, False
        runs = [call for call in code.calls if self.runners.runs(call)]
        for name in code.called:
            self.votes[name].append(synced)
        if runs:
            given = [g for call in runs for g in call_arguments(call)]  # evaluated before it
            after_run = self.keys.seen_in(header(statement), pruned={id(g) for g in given})
            # A file name given to the traced function is no read of the file.
            read = after_run or Keys(self.keys.names, self.keys.attributes).seen_in(given)
            if after_run:
                self.blocked = self.blocked or statement  # read and run in one statement
        else:
            read = code.mentions(self.keys)
        if not synced and read:
            self.before.append(candidate or statement)
            self.reads.append(statement)
            synced = True
        if runs:
            synced = False
        return self._inside(statement, synced), bool(runs)

    def _inside(self, statement: ast.stmt, synced: bool) -> bool:
        """The state after the statements inside `statement`, entered with `synced`."""
        if isinstance(statement, FUNCTIONS):
            return synced  # its body runs when it is called: scanned on its own
        if isinstance(statement, ast.ClassDef):
            return self.block(statement.body, synced)
        if isinstance(statement, _LOOPS):
            first = self.block(statement.body, synced)
            again = self.block(statement.body, synced and first)  # after an iteration
            if (
                isinstance(statement, ast.While)
                and not again
                and self.keys.seen_in([statement.test])
            ):
                self.blocked = self.blocked or statement  # the test runs again after a call
            after = synced and first and again
            return self.block(statement.orelse, after)
        if isinstance(statement, ast.Try | ast.TryStar):
            body = self.block(statement.body, synced)
            calls = any(
                isinstance(n, ast.Call) and self.runners.runs(n)
                for n in walk_statements(statement.body)
            )
            handler_start = synced and not calls
            ends = [self.block(statement.orelse, body)]
            ends += [self.block(h.body, handler_start) for h in statement.handlers]
            return self.block(statement.finalbody, all(ends) and handler_start)
        ends = [self.block(branch, synced) for branch in branches(statement)]
        if isinstance(statement, ast.Match):
            ends.append(synced)  # no case matched
        return all(ends) if ends else synced
