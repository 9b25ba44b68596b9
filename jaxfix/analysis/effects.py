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
- where host code must wait for them: `jaxfix.analysis.waits`, on this index.
"""

from __future__ import annotations

import ast
import builtins
import dataclasses
from collections import defaultdict
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TypeGuard

from jaxfix.analysis.names import dotted, of_the_program
from jaxfix.analysis.statements import (
    DEFINITIONS,
    FUNCTIONS,
    header,
    inner_statements,
    last_name,
    target_names,
    walk_code,
)
from jaxfix.analysis.summaries import FunctionNode, Module, params_of
from jaxfix.models.loggers import LOGGER_METHODS

_BUILTINS = frozenset(dir(builtins))
# How many `a = b` steps a key is followed through to the strings it holds.
_MAX_DEPTH = 4


@dataclass(frozen=True)
class Keys:
    """What host code mentions when it sees a host effect."""

    names: frozenset[str] = frozenset()  # module and closure variables
    attributes: frozenset[str] = frozenset()
    paths: frozenset[str] = frozenset()  # file-like strings
    # The console (`print`, a logger): each later line written there comes after its lines.
    console: bool = False

    def __or__(self, other: Keys) -> Keys:
        return Keys(
            self.names | other.names,
            self.attributes | other.attributes,
            self.paths | other.paths,
            self.console or other.console,
        )

    def plain(self) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...], bool]:
        """As plain values (they travel between processes and into the cache)."""
        return (
            tuple(sorted(self.names)),
            tuple(sorted(self.attributes)),
            tuple(sorted(self.paths)),
            self.console,
        )

    @classmethod
    def from_plain(cls, plain: Sequence[Any]) -> Keys:
        names, attributes, paths, console = plain
        return cls(frozenset(names), frozenset(attributes), frozenset(paths), bool(console))

    def seen_in(self, nodes: Iterable[ast.AST], pruned: Collection[int] = ()) -> bool:
        """Whether the code of `nodes` (less the nodes under those whose ids are `pruned`)
        mentions one of the keys."""
        for node in walk_code(nodes, pruned):
            if isinstance(node, ast.Name) and node.id in self.names:
                return True
            if isinstance(node, ast.Attribute) and node.attr in self.attributes:
                return True
            if self.console and isinstance(node, ast.Call) and writes_console(node):
                return True
            if (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and any(path in node.value for path in self.paths)
            ):
                return True
        return False


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
        # Everything below comes from the analysis' walk of the module (`declarations`).
        functions = {fid: node for fid, node in module.nodes.items() if isinstance(node, FUNCTIONS)}
        in_trace = _nested_in(module, {module.by_node[f] for f in traced if f in module.by_node})
        self.host_functions = [f for fid, f in functions.items() if fid not in in_trace]
        self.scope_of = {f: module.scope(fid) for fid, f in functions.items()}
        self.class_of = {
            f: module.owners[fid] for fid, f in functions.items() if fid in module.owners
        }
        self.defined = {f.name for f in functions.values()} | set(module.classes)
        self.bound: dict[str, list[ast.expr]] = defaultdict(list)  # name -> values given it
        self.assigned: list[tuple[str, ast.expr]] = []  # `name = value`, `obj.name = value`
        for node in module.binders:
            self._note_binding(node)
        self.own_calls = {f: self.scope_of[f].calls for f in functions.values()}
        self._host_calls: dict[str, list[ast.Call]] | None = None

    def _note_binding(self, node: ast.AST) -> None:
        if isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign) and node.value:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            named = {n for t in targets for n in target_names(t)}
            for name in named:
                self.bound[name].append(node.value)
            self.assigned += [(n, node.value) for t in targets for n in target_names(t, False)]
        elif isinstance(node, ast.For | ast.AsyncFor | ast.comprehension):
            for name in target_names(node.target):
                self.bound[name].append(node.iter)
        elif isinstance(node, ast.withitem) and node.optional_vars is not None:
            for name in target_names(node.optional_vars):
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
        keys = self._keys(statements, local, 0)
        return keys | _imported_state_written(statements, self.module) if keys is not None else None

    def _keys(self, nodes: Iterable[ast.AST], local: _Local | None, depth: int) -> Keys | None:
        """The keys of the code of `nodes`: its variables (followed `depth` steps further to
        the strings they hold), its attributes other than methods called, its file-like
        strings."""
        if depth > _MAX_DEPTH:
            return Keys()
        walked = list(walk_code(nodes))
        called = {id(node.func) for node in walked if isinstance(node, ast.Call)}
        roots = {id(node.value) for node in walked if isinstance(node, ast.Attribute)}
        keys = Keys()
        for node in walked:
            found: Keys | None = Keys()
            if isinstance(node, ast.Name):
                found = self._name_keys(node, local, depth, id(node) in roots)
            elif isinstance(node, ast.Attribute) and id(node) not in called:
                if not _is_import(node.value, self.module) or _is_project_state(node, self.module):
                    found = Keys(attributes=frozenset({node.attr}))
            elif isinstance(node, ast.Constant) and _path_like(node.value):
                found = Keys(paths=frozenset({node.value}))
            elif isinstance(node, ast.Call) and writes_console(node):
                found = Keys(console=True)
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
                found = self.call_arguments(local.function, name, depth)
            else:
                found = self._keys(self.bound.get(name, []), local, depth + 1)
            return Keys(names=frozenset({name})) | found if found is not None else None
        imported = self.module.imports.get(name)
        if of_the_program(imported):
            return Keys(names=frozenset({name}), attributes=frozenset({name}))  # `BLOBS`
        if imported is not None or name in self.defined:
            return Keys()  # code, not state: host code that uses it writes nothing of ours
        if name in _BUILTINS and name not in self.bound:
            return Keys()
        return Keys(names=frozenset({name}), paths=self._strings(name, depth))

    def _strings(self, name: str, depth: int) -> frozenset[str]:
        """The file-like strings a variable may hold (`CKPT = os.path.join(DIR, "w.pkl")`)."""
        if depth >= _MAX_DEPTH:
            return frozenset()
        found: set[str] = set()
        for node in walk_code(self.bound.get(name, [])):
            if isinstance(node, ast.Constant) and _path_like(node.value):
                found.add(node.value)
            elif isinstance(node, ast.Name) and node.id != name:
                found |= self._strings(node.id, depth + 1)
        return frozenset(found)

    def call_arguments(self, function: FunctionNode, param: str, depth: int) -> Keys | None:
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

    def _calls_of(self, name: str) -> list[ast.Call]:
        """The calls, outside traced code, of something called `name`."""
        if self._host_calls is None:
            self._host_calls = defaultdict(list)
            scopes = [self.module.scope("<module>"), *map(self.scope_of.get, self.host_functions)]
            for scope in scopes:
                for call in scope.calls if scope is not None else ():
                    self._host_calls[last_name(call.func) or ""].append(call)
        return self._host_calls.get(name, [])

    # ----- what moves with it --------------------------------------------------------------

    def later_users(
        self, statements: Sequence[ast.stmt], keys: Keys, function: FunctionNode
    ) -> list[ast.stmt]:
        """The statements of `function` after the last of `statements` that mention `keys`
        (the outermost statement that does). What they print stays at trace time: a line
        printed there is not one the callback's lines must come before."""
        keys = dataclasses.replace(keys, console=False)
        last = max(s.end_lineno or s.lineno for s in statements)
        found: list[ast.stmt] = []
        pending = list(function.body) if not isinstance(function, ast.Lambda) else []
        while pending:
            statement = pending.pop(0)
            if statement in statements or isinstance(statement, DEFINITIONS):
                continue
            if statement.lineno > last and keys.seen_in(header(statement)):
                found.append(statement)
            elif (statement.end_lineno or statement.lineno) > last:
                pending[:0] = inner_statements(statement)
        return found


# What writes to the console: `print` (to no other file), a logger's methods, the streams.
_STREAMS = frozenset({"stdout", "stderr"})


def writes_console(call: ast.Call) -> bool:
    """Whether `call` writes a line to the console: `print(...)` (not to a file),
    `logging.info(...)` and the methods of a logger (a receiver named `logger`, `log`...),
    `sys.stdout.write(...)`."""
    if isinstance(call.func, ast.Name):
        target = next((k.value for k in call.keywords if k.arg == "file"), None)
        return call.func.id == "print" and (target is None or _is_stream(target))
    if not isinstance(call.func, ast.Attribute):
        return False
    receiver = call.func.value  # `logger`, `self.log`, `sys.stdout`, `logging.getLogger()`
    receiver = receiver.func if isinstance(receiver, ast.Call) else receiver
    name = (last_name(receiver) or "").lower().strip("_")
    if call.func.attr == "write":
        return name in _STREAMS
    return call.func.attr in LOGGER_METHODS and name.endswith(("log", "logger", "logging"))


def _is_stream(node: ast.expr) -> bool:
    parts = dotted(node)
    return parts is not None and parts[-1] in _STREAMS


def _nested_in(module: Module, fids: Collection[str]) -> set[str]:
    """`fids` and the ids of every function defined, at any depth, inside one of them."""
    found = set(fids)
    for fid in module.nodes:
        chain = [fid]
        while chain[-1] not in found and chain[-1] in module.declared_in:
            chain.append(module.declared_in[chain[-1]])
        if chain[-1] in found:
            found.update(chain)
    return found


def _imported_state_written(statements: Sequence[ast.stmt], module: Module) -> Keys:
    """The attributes of imported modules that `statements` write into (`environ` for
    `os.environ[k] = v`): state, though the module's other names are code."""
    found: set[str] = set()
    for node in walk_code(statements):
        if isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign):
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                while isinstance(target, ast.Subscript) or (
                    isinstance(target, ast.Attribute) and not _is_import(target.value, module)
                ):
                    target = target.value
                if isinstance(target, ast.Attribute):
                    found.add(target.attr)
    return Keys(attributes=frozenset(found))


def _is_import(node: ast.expr, module: Module) -> bool:
    parts = dotted(node)
    return parts is not None and parts[0] in module.imports


def _is_project_state(node: ast.Attribute, module: Module) -> bool:
    """`state.VALUES`: an attribute (not called) of a module that is no library's (so is
    `BLOBS` of `from pkg.state import BLOBS`, see `_name_keys`)."""
    parts = dotted(node.value)
    return of_the_program(module.imports.get(parts[0]) if parts else None)


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
