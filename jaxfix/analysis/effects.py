"""What a statement moved into a host callback writes, and where host code reads it.

A statement hoisted out of traced code into `jax.debug.callback` runs when the compiled function
executes: on an accelerator after the call has returned, at a time that only
`jax.effects_barrier()` bounds. What it writes is told by the *keys* it mentions (`Keys`): the
module and closure variables, the attributes and the file-like strings (`"ckpt.pkl"`, `".tmp"`)
it touches; host code that mentions a key reads what the callback wrote (or writes over it).
Over-approximated on purpose: a barrier too many costs a wait, one too few a wrong answer.

- `EffectIndex.keys_of`: the keys of statements of a traced function, a static parameter
  followed to what the call sites give it (None when a call site does not say: the reads
  cannot be found);
- `EffectIndex.later_users`: the statements of the same function after them that mention
  their keys (at trace time, so before the callback: they must move with it);
- `EffectIndex.barriers`: the host statements before which `jax.effects_barrier()` must run:
  on every path, the first that reads a key after code that may run the traced function with
  no barrier between (a host function called from nowhere in the file starts unsure). None
  when a read cannot be preceded by one: it shares its statement with such a call.
"""

from __future__ import annotations

import ast
import builtins
from collections import defaultdict
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TypeGuard

from jaxfix.analysis.flow import FunctionNode, Module, params_of
from jaxfix.analysis.names import dotted

BARRIER = "jax.effects_barrier"
_BUILTINS = frozenset(dir(builtins))
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_DEFINITIONS = (*_FUNCTIONS, ast.ClassDef)
_LATER = (*_DEFINITIONS, ast.Lambda)  # code that runs when called, not where it stands
_LOOPS = (ast.For, ast.AsyncFor, ast.While)
# How many `a = b` steps a key is followed through to the strings it holds.
_MAX_DEPTH = 4
# Passes over the host code before the functions' starting states settle (each pass can only
# turn some from "none pending" to "unsure").
_MAX_PASSES = 20


@dataclass(frozen=True)
class Keys:
    """What host code mentions when it sees a host effect."""

    names: frozenset[str] = frozenset()  # module and closure variables
    attributes: frozenset[str] = frozenset()
    paths: frozenset[str] = frozenset()  # file-like strings

    def __or__(self, other: Keys) -> Keys:
        return Keys(
            self.names | other.names,
            self.attributes | other.attributes,
            self.paths | other.paths,
        )

    def __bool__(self) -> bool:
        return bool(self.names or self.attributes or self.paths)

    def seen_in(self, nodes: Iterable[ast.AST], pruned: Collection[int] = ()) -> bool:
        """Whether the code of `nodes` (less the nodes under those whose ids are `pruned`)
        mentions one of the keys."""
        for node in _walk(nodes, pruned):
            if isinstance(node, ast.Name) and node.id in self.names:
                return True
            if isinstance(node, ast.Attribute) and node.attr in self.attributes:
                return True
            if (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and any(path in node.value for path in self.paths)
            ):
                return True
        return False


@dataclass(frozen=True)
class Barriers:
    """Where host code must wait for the callbacks: before `before`, or nowhere when
    `blocked` is the statement at which that cannot be done."""

    before: tuple[ast.stmt, ...] = ()
    blocked: ast.stmt | None = None


@dataclass(frozen=True)
class _Local:
    """The traced function whose statements move, and what its own body binds."""

    function: FunctionNode
    names: frozenset[str]  # its parameters and the names its body binds
    params: frozenset[str]
    declared: frozenset[str]  # `global` / `nonlocal`


class EffectIndex:
    """One file's host code, indexed for the questions above."""

    def __init__(
        self, module: Module, traced: Collection[ast.AST], is_traced: Callable[[ast.AST], bool]
    ) -> None:
        """`traced`: the functions that run under a trace; `is_traced`: whether an expression
        is certainly a tracer where it stands."""
        self.module = module
        self.is_traced = is_traced
        self.tree = module.tree
        in_trace: set[ast.AST] = set()  # traced functions and every function inside one
        for function in traced:
            in_trace.update(n for n in ast.walk(function) if isinstance(n, _FUNCTIONS))
        functions = [n for n in ast.walk(self.tree) if isinstance(n, _FUNCTIONS)]
        self.host_functions = [f for f in functions if f not in in_trace]
        self.class_of = {
            item: node.name
            for node in ast.walk(self.tree)
            if isinstance(node, ast.ClassDef)
            for item in node.body
            if isinstance(item, _FUNCTIONS)
        }
        self.defined = {f.name for f in functions} | set(module.classes)
        self.bound: dict[str, list[ast.expr]] = defaultdict(list)  # name -> values given it
        self.assigned: list[tuple[str, ast.expr]] = []  # `name = value`, `obj.name = value`
        for node in ast.walk(self.tree):
            self._note_binding(node)
        self.own_calls = {
            f: [n for n in _walk_statements(f.body) if isinstance(n, ast.Call)] for f in functions
        }

    def _note_binding(self, node: ast.AST) -> None:
        if isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign) and node.value:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            named = {n for t in targets for n in _target_names(t)}
            for name in named:
                self.bound[name].append(node.value)
            self.assigned += [(n, node.value) for t in targets for n in _target_names(t, False)]
        elif isinstance(node, ast.For | ast.AsyncFor | ast.comprehension):
            for name in _target_names(node.target):
                self.bound[name].append(node.iter)
        elif isinstance(node, ast.withitem) and node.optional_vars is not None:
            for name in _target_names(node.optional_vars):
                self.bound[name].append(node.context_expr)

    # ----- what a statement writes ---------------------------------------------------------

    def keys_of(self, statements: Sequence[ast.stmt], function: FunctionNode) -> Keys | None:
        """The keys of `statements` of the traced `function`; None when one comes from a
        parameter that a call site gives in a way the file does not show."""
        fid = self.module.by_node.get(function)
        scope = self.module.scope(fid) if fid is not None else None
        params, _ = params_of(function)
        local = _Local(
            function,
            frozenset(scope.assigned if scope is not None else ()) | frozenset(params),
            frozenset(params),
            frozenset(scope.declared if scope is not None else ()),
        )
        return self._keys(statements, local, 0)

    def _keys(self, nodes: Iterable[ast.AST], local: _Local | None, depth: int) -> Keys | None:
        """The keys of the code of `nodes`: its variables (followed `depth` steps further to
        the strings they hold), its attributes other than methods called, its file-like
        strings."""
        if depth > _MAX_DEPTH:
            return Keys()
        walked = list(_walk(nodes))
        called = {id(node.func) for node in walked if isinstance(node, ast.Call)}
        roots = {id(node.value) for node in walked if isinstance(node, ast.Attribute)}
        keys = Keys()
        for node in walked:
            found: Keys | None = Keys()
            if isinstance(node, ast.Name):
                found = self._name_keys(node, local, depth, id(node) in roots)
            elif isinstance(node, ast.Attribute) and id(node) not in called:
                if not _is_import(node.value, self.module):
                    found = Keys(attributes=frozenset({node.attr}))
            elif isinstance(node, ast.Constant) and _path_like(node.value):
                found = Keys(paths=frozenset({node.value}))
            if found is None:
                return None
            keys |= found
        return keys

    def _name_keys(
        self, node: ast.Name, local: _Local | None, depth: int, rooted: bool
    ) -> Keys | None:
        """The keys of a name; `rooted`: the name is read for an attribute (`self.x`), which
        is a key of its own."""
        name = node.id
        if local is not None and name in local.names and name not in local.declared:
            if self.is_traced(node) or (rooted and name in local.params):
                return Keys()  # data the callback receives, or an object of the caller's
            # The name itself: later statements of the function that use it move too.
            if name in local.params:
                found = self._given(local.function, name, depth)
            else:
                found = self._keys(self.bound.get(name, []), local, depth + 1)
            return Keys(names=frozenset({name})) | found if found is not None else None
        if name in self.module.imports or name in self.defined:
            return Keys()  # code, not state: host code that uses it writes nothing of ours
        if name in _BUILTINS and name not in self.bound:
            return Keys()
        return Keys(names=frozenset({name}), paths=self._strings(name, depth))

    def _strings(self, name: str, depth: int) -> frozenset[str]:
        """The file-like strings a variable may hold (`CKPT = os.path.join(DIR, "w.pkl")`)."""
        if depth >= _MAX_DEPTH:
            return frozenset()
        found: set[str] = set()
        for node in _walk(self.bound.get(name, [])):
            if isinstance(node, ast.Constant) and _path_like(node.value):
                found.add(node.value)
            elif isinstance(node, ast.Name) and node.id != name:
                found |= self._strings(node.id, depth + 1)
        return frozenset(found)

    def _given(self, function: FunctionNode, param: str, depth: int) -> Keys | None:
        """The keys of what the file's call sites give `param` (its default where they give
        nothing); None without a call site, or when one passes `*args` / `**kwargs`."""
        if isinstance(function, ast.Lambda):
            return None
        _, positional = params_of(function)
        shift = 1 if function in self.class_of else 0  # `self`, given by the receiver
        index = positional.index(param) - shift if param in positional else -1
        sites = list(self._calls_of(function.name))
        keys = Keys() if sites else None
        for call in sites:
            if any(isinstance(a, ast.Starred) for a in call.args) or any(
                k.arg is None for k in call.keywords
            ):
                return None
            given = next((k.value for k in call.keywords if k.arg == param), None)
            if given is None and 0 <= index < len(call.args):
                given = call.args[index]
            given = given or _default(function, param)
            found = self._keys([given], None, depth + 1) if given is not None else None
            if found is None or keys is None:
                return None
            keys |= found
        return keys

    def _calls_of(self, name: str) -> Iterator[ast.Call]:
        """The calls, outside traced code, of something called `name`."""
        for statement in self._host_statements():
            for node in _walk(_header(statement)):
                if isinstance(node, ast.Call) and _last_name(node.func) == name:
                    yield node

    def _host_statements(self) -> Iterator[ast.stmt]:
        pending: list[ast.stmt] = list(self.tree.body)
        for function in self.host_functions:
            pending.extend(function.body)
        while pending:
            statement = pending.pop()
            yield statement
            if not isinstance(statement, _FUNCTIONS):
                pending.extend(_inner_statements(statement))

    # ----- what moves with it --------------------------------------------------------------

    def later_users(
        self, statements: Sequence[ast.stmt], keys: Keys, function: FunctionNode
    ) -> list[ast.stmt]:
        """The statements of `function` after the last of `statements` that mention `keys`
        (the outermost statement that does)."""
        last = max(s.end_lineno or s.lineno for s in statements)
        found: list[ast.stmt] = []
        pending = list(function.body) if not isinstance(function, ast.Lambda) else []
        while pending:
            statement = pending.pop(0)
            if statement in statements or isinstance(statement, _DEFINITIONS):
                continue
            if statement.lineno > last and keys.seen_in(_header(statement)):
                found.append(statement)
            elif (statement.end_lineno or statement.lineno) > last:
                pending[:0] = _inner_statements(statement)
        return found

    # ----- where host code must wait -------------------------------------------------------

    def barriers(
        self, function: FunctionNode, keys: Keys, planned: Collection[ast.stmt] = ()
    ) -> Barriers:
        """Where `jax.effects_barrier()` must run for host code that reads `keys` after code
        that may run `function`. `planned`: statements other fixes put a barrier before; one
        of them is used when it stands between the call and the read."""
        runners = self._runners(function, keys)
        entries: dict[str, bool] | None = None  # optimistic at first: a fixed point down
        for _ in range(_MAX_PASSES):
            scan = _Scan(self, keys, runners, entries, planned)
            scan.block(self.tree.body, synced=True)
            for host in self.host_functions:
                scan.block(host.body, synced=scan.entry(host))
            if scan.entries == entries or scan.blocked is not None:
                break
            entries = scan.entries
        return Barriers(tuple(dict.fromkeys(scan.before)), scan.blocked)

    def _runners(self, function: FunctionNode, keys: Keys) -> _Runners:
        """The names through which host code may run `function`: its own (its class's, for a
        `__call__`), those of the functions whose code runs one, and the variables that may
        hold one (`step = jax.jit(f)`, `model = MLP()`, `opt = optax.chain(make_opt())`)."""
        runners = _Runners(set(), set())
        if isinstance(function, _FUNCTIONS):
            self._add_function(runners, function)
        grown = True
        while grown:
            before = len(runners.functions) + len(runners.aliases)
            for node, calls in self.own_calls.items():
                if node.name not in runners.functions and any(map(runners.runs, calls)):
                    self._add_function(runners, node)
            for target, value in self.assigned:
                if target not in keys.names and runners.holds(value):
                    runners.aliases.add(target)
            grown = len(runners.functions) + len(runners.aliases) != before
        return runners

    def _add_function(
        self, runners: _Runners, function: ast.FunctionDef | ast.AsyncFunctionDef
    ) -> None:
        runners.functions.add(function.name)
        if function.name == "__call__" and function in self.class_of:
            runners.functions.add(self.class_of[function])
            runners.classes.add(self.class_of[function])

    def is_barrier(self, statement: ast.stmt) -> bool:
        """`jax.effects_barrier()` as a statement (through any import of it)."""
        if not isinstance(statement, ast.Expr) or not isinstance(statement.value, ast.Call):
            return False
        parts = dotted(statement.value.func)
        head = self.module.imports.get(parts[0]) if parts else None
        return parts is not None and head is not None and ".".join([head, *parts[1:]]) == BARRIER


@dataclass
class _Runners:
    """What may run the traced function: functions (by name, classes whose `__call__` does
    among them) and variables that may hold one."""

    functions: set[str]
    aliases: set[str]
    classes: set[str] = field(default_factory=set)

    def runs(self, call: ast.Call) -> bool:
        """Whether `call` may run it: it calls, or is given, a runner (`step(x)`,
        `jax.vmap(predict)(xs)`, `lax.scan(body, ...)`, `model.apply(...)`)."""
        func = call.func
        if self.refers(func) or (isinstance(func, ast.Call) and self.runs(func)):
            return True
        return any(self.refers(g, given=True) for g in _given(call))

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
            for g in _given(value)
            for n in _walk([g])
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

    def block(self, body: Sequence[ast.stmt], synced: bool) -> bool:
        """The state after `body`, entered with `synced`: whether no callback can be pending.
        A barrier another fix plans in the block, after the last call, serves a later read."""
        candidate: ast.stmt | None = None
        for statement in body:
            if not synced and candidate is None and statement in self.planned:
                candidate = statement
            synced, runs = self.statement(statement, synced, candidate)
            if synced or runs or _inner_statements(statement):
                candidate = None
        return synced

    def statement(
        self, statement: ast.stmt, synced: bool, candidate: ast.stmt | None
    ) -> tuple[bool, bool]:
        """The state after `statement`, and whether it may run the traced function itself."""
        if self.index.is_barrier(statement):
            return True, False
        header = _header(statement)
        runs = [n for n in _walk(header) if isinstance(n, ast.Call) and self.runners.runs(n)]
        given = [g for call in runs for g in _given(call)]  # evaluated before the call
        for name in _called_names(header):
            self.votes[name].append(synced)
        after_run = self.keys.seen_in(header, pruned={id(g) for g in given})
        if runs and after_run:
            self.blocked = self.blocked or statement  # read and run in one statement
        # A file name given to the traced function is no read of the file.
        state = Keys(self.keys.names, self.keys.attributes)
        if not synced and (after_run or state.seen_in(given)):
            self.before.append(candidate or statement)
            synced = True
        if runs:
            synced = False
        return self._inside(statement, synced), bool(runs)

    def _inside(self, statement: ast.stmt, synced: bool) -> bool:
        """The state after the statements inside `statement`, entered with `synced`."""
        if isinstance(statement, _FUNCTIONS):
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
                for n in _walk_statements(statement.body)
            )
            handler_start = synced and not calls
            ends = [self.block(statement.orelse, body)]
            ends += [self.block(h.body, handler_start) for h in statement.handlers]
            return self.block(statement.finalbody, all(ends) and handler_start)
        ends = [self.block(branch, synced) for branch in _branches(statement)]
        if isinstance(statement, ast.Match):
            ends.append(synced)  # no case matched
        return all(ends) if ends else synced


# ----- syntax helpers ----------------------------------------------------------------------


def _header(statement: ast.stmt) -> list[ast.AST]:
    """What runs when `statement` starts (all of a simple statement; a compound statement's
    test, iterable, context managers or subject; a definition's decorators and defaults)."""
    if isinstance(statement, ast.If | ast.While):
        return [statement.test]
    if isinstance(statement, ast.For | ast.AsyncFor):
        return [statement.target, statement.iter]
    if isinstance(statement, ast.With | ast.AsyncWith):
        return list(statement.items)
    if isinstance(statement, ast.Match):
        return [statement.subject]
    if isinstance(statement, ast.Try | ast.TryStar):
        return []
    if isinstance(statement, _FUNCTIONS):
        args = statement.args
        return [*statement.decorator_list, *args.defaults, *(d for d in args.kw_defaults if d)]
    if isinstance(statement, ast.ClassDef):
        return [*statement.decorator_list, *statement.bases, *statement.keywords]
    if isinstance(statement, ast.Global | ast.Nonlocal | ast.Import | ast.ImportFrom):
        return []
    return [statement]


def _branches(statement: ast.stmt) -> list[list[ast.stmt]]:
    """The statement lists of an `if`, `with` or `match` (for `if`, the `else` too)."""
    if isinstance(statement, ast.If):
        return [statement.body, statement.orelse]
    if isinstance(statement, ast.With | ast.AsyncWith):
        return [statement.body]
    if isinstance(statement, ast.Match):
        return [case.body for case in statement.cases]
    return []


def _inner_statements(statement: ast.stmt) -> list[ast.stmt]:
    inner: list[ast.stmt] = []
    for name in ("body", "orelse", "finalbody"):
        value = getattr(statement, name, None)
        if isinstance(value, list):
            inner.extend(s for s in value if isinstance(s, ast.stmt))
    for handler in getattr(statement, "handlers", ()):
        inner.extend(handler.body)
    for case in getattr(statement, "cases", ()):
        inner.extend(case.body)
    return inner


def _walk_statements(statements: Sequence[ast.stmt]) -> Iterator[ast.AST]:
    """Every node of `statements`, nested statements too, not inside definitions."""
    for statement in statements:
        if isinstance(statement, _DEFINITIONS):
            continue
        yield from _walk(_header(statement))
        yield from _walk_statements(_inner_statements(statement))


def _walk(nodes: Iterable[ast.AST], pruned: Collection[int] = ()) -> Iterator[ast.AST]:
    """Every node under `nodes`, not inside a nested `def`, class or lambda nor under a node
    whose id is in `pruned`."""
    pending = [node for node in nodes if id(node) not in pruned]
    while pending:
        node = pending.pop()
        yield node
        pending.extend(
            child
            for child in ast.iter_child_nodes(node)
            if not isinstance(child, _LATER) and id(child) not in pruned
        )


def _given(call: ast.Call) -> list[ast.expr]:
    """The arguments of `call`."""
    return [*call.args, *(k.value for k in call.keywords)]


def _called_names(nodes: Iterable[ast.AST]) -> Iterator[str]:
    for node in _walk(nodes):
        if isinstance(node, ast.Call):
            name = _last_name(node.func)
            if name is not None:
                yield name


def _last_name(func: ast.expr) -> str | None:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def _target_names(target: ast.expr, unpacking: bool = True) -> set[str]:
    """The names (and attribute names) an assignment target binds (only a lone name or
    attribute without `unpacking`)."""
    if isinstance(target, ast.Name):
        return {target.id}
    if isinstance(target, ast.Attribute):
        return {target.attr}
    if unpacking and isinstance(target, ast.Tuple | ast.List):
        return {n for e in target.elts for n in _target_names(e)}
    if unpacking and isinstance(target, ast.Starred):
        return _target_names(target.value)
    return set()


def _is_import(node: ast.expr, module: Module) -> bool:
    parts = dotted(node)
    return parts is not None and parts[0] in module.imports


def _default(function: ast.FunctionDef | ast.AsyncFunctionDef, param: str) -> ast.expr | None:
    args = function.args
    positional = [*args.posonlyargs, *args.args]
    offset = len(positional) - len(args.defaults)
    for index, arg in enumerate(positional):
        if arg.arg == param and index >= offset:
            return args.defaults[index - offset]
    for arg, default in zip(args.kwonlyargs, args.kw_defaults, strict=True):
        if arg.arg == param:
            return default
    return None


def _path_like(text: object) -> TypeGuard[str]:
    """A string that may name a file or a suffix of one (`"w.pkl"`, `".tmp"`, `"out/"`), not
    a mode, a format or a message."""
    return (
        isinstance(text, str)
        and 1 < len(text) <= 255
        and ("." in text or "/" in text)
        and not any(c.isspace() or c in "%{}" for c in text)
    )
