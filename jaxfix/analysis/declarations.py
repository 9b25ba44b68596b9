"""The walk of a module before anything is interpreted: its scopes and bindings, imports,
classes and their static fields, functions and the transforms applied to them, and the nodes
the later passes read (`INDEXED`)."""

from __future__ import annotations

import ast
import builtins
import functools
from collections.abc import Callable, Mapping
from dataclasses import replace
from types import FunctionType
from typing import Any

from jaxfix.analysis.names import dotted, import_bindings
from jaxfix.analysis.pytree_fields import static_attribute_names
from jaxfix.analysis.statements import names_bound
from jaxfix.analysis.summaries import (
    Bindings,
    FunctionNode,
    Module,
    Scope,
    function_id,
    params_of,
    qualified_name,
)
from jaxfix.analysis.walk import PUSHERS, push_children
from jaxfix.models.parts import WholeModule
from jaxfix.models.transforms import (
    CALL_WRAPPERS,
    CUSTOM_RULE_METHODS,
    PARTIAL,
    SAME_PARAMETERS,
    TRACED_MODULE_BASES,
    TransformSpec,
)

_BUILTINS = frozenset(dir(builtins))
# After a class's name in `Module.instance_params`: the parameter holds a sequence of instances.
ELEMENTS = "[]"
# In `Module.instance_params` for a class: the parameter holds a list or tuple (`[a, b]`), never
# a dict: iterating it gives its elements, tracers when it holds tracers.
SEQUENCE = "<sequence>"


# The last tree's declarations: a file that other modules trace is analysed again on the same
# tree with more of their calls (`jaxfix.run.batch` rounds, `jaxfix.run.engine` keeps the tree).
# Only what the walk finds is shared; every analysis interprets the functions afresh (a summary a
# call cycle leaves unknown depends on the order the tracing asks for the summaries).
# The walk is kept until what only interpreting needs is drawn from it.
_last_declared: tuple[ast.Module, tuple[object, ...], Module, _Declarations | None] | None = None


def declared(
    tree: ast.Module,
    module: str,
    is_package: bool,
    transforms: Mapping[str, TransformSpec],
    traced_only: bool,
    whole: WholeModule | None = None,
) -> tuple[Module, bool]:
    """A module holding what one walk over `tree` finds (its functions, scopes, imports, the
    calls that may apply a transform), and nothing interpreted yet; and whether it names a
    transform (`names_a_transform`). What only the interpreters read is drawn from the walk
    when they will run (with `traced_only`, not for a module that names no transform: see
    `analyse`); the functions that may apply a transform, only in a module that names one:
    another makes no entry, and its functions wait for a caller."""
    global _last_declared
    key = (module, is_package, transform_items(transforms), whole)
    last = _last_declared
    if last is None or last[0] is not tree or last[1] != key:
        walked = Module(module, tree, {})
        walker = _Declarations(walked, is_package)
        walker.walk(tree)
        last = _last_declared = (tree, key, walked, walker)
    walked, declarations = last[2], last[3]
    transforming = names_a_transform(walked, frozenset(transforms))
    if (transforming or not traced_only) and declarations is not None:
        walked.applying = declarations.applying(transforms) if transforming else set()
        walked.whole_read = True
        if whole is None:
            walked.static_fields = _static_fields(walked)
            walked.instance_params = _passed_instances(walked)
        else:
            walked.static_fields = set(whole.static_fields)
            walked.instance_params = {fid: dict(ps) for fid, ps in whole.instance_params}
        _last_declared = (tree, key, walked, None)
    # The fields the interpreters fill start empty; the walk's are shared (only read).
    copy = replace(
        walked,
        functions={},
        entries=[],
        transformed=set(),
        imported_entries=[],
        final_env={},
        pending={},
        scopes=dict(walked.scopes),
        guarded=set(),
        conditions={},
        _values={},
        _values_of=0,
        static_queries=set(),
    )
    return copy, transforming


Work = list[ast.AST | Callable[[], None]]  # nodes to visit, and scope exits to run
# The kinds of node the walk indexes (`Module.indexed`) for the passes that read the file after
# the analysis (`jaxfix.analysis.candidates`), so that they need not walk it again: what binds,
# stores or may hash, defines a function or a class, imports, declares names or makes a call. And
# attributes stored to (`self.x = ...`), not the many that are read.
INDEXED = frozenset(
    {ast.Assign, ast.AnnAssign, ast.AugAssign, ast.For, ast.AsyncFor, ast.With, ast.AsyncWith}
    | {ast.Subscript, ast.Dict, ast.Set, ast.DictComp, ast.SetComp}
    | {ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef}
    | {ast.Import, ast.ImportFrom, ast.Global, ast.Nonlocal}
    | {ast.Call, ast.Compare, ast.Expr}
)


class _Declarations:
    """One walk over the module: every function's id (its qualified name and line), the
    classes, and per function what its own body binds, declares `global` / `nonlocal`, calls
    and assigns (nested functions and classes hold their own). The walk keeps its own stack
    (deep code cannot overflow Python's) and skips contexts and constants; it is a third of
    the analysis of a file."""

    def __init__(self, module: Module, is_package: bool) -> None:
        self.module = module
        self.is_package = is_package
        self.stack: list[str] = []
        self.classes: list[int] = []  # the depths of `stack` that are classes
        self.scopes: list[Scope] = [module.scope("<module>")]
        self.inside: tuple[str, ...] = ()  # the functions whose bodies hold the node
        self.fid = "<module>"  # the innermost of them, or the module
        # Calls that may apply a transform, with the functions that must run for them to.
        self.calls: list[tuple[ast.Call, tuple[str, ...]]] = []
        self.marked: set[str] = set()  # functions defining decorated functions or classes
        self.function_names: set[str] = set()  # defs, and names bound to lambdas
        self.names = Bindings()  # of the top-level statement being walked
        self.statement = 0  # its index

    def walk(self, tree: ast.Module) -> None:
        indexed = self.module.indexed
        names_read = self.module.names_read
        scopes = self.scopes
        for index, statement in enumerate(tree.body):
            self.statement = index
            self.names = Bindings()
            mentions = self.names.mentions
            self.module.statement_names.append(self.names)
            work: Work = [statement]
            push = work.append
            while work:
                item: Any = work.pop()  # told apart by its exact type, the fastest test
                kind = type(item)
                if kind is ast.Name:  # a third of the nodes walked: handled here, inline
                    name = item.id
                    scopes[-1].names.add(name)
                    if type(item.ctx) is ast.Load:
                        names_read.add(name)
                        mentions.add(name)
                    else:
                        scopes[-1].assigned.add(name)
                        self._define(name)
                    continue
                if kind is FunctionType:
                    item()  # enter or leave a scope
                    continue
                if kind in INDEXED:
                    indexed.append((item, self.fid, index))
                handler = _HANDLERS.get(kind)
                if handler is None:
                    PUSHERS[kind](item, push)
                else:
                    handler(self, item, work)

    def _define(self, *names: str | None) -> None:
        """Names bound at module level (not in a function or class body)."""
        if len(self.scopes) == 1:
            self.names.defines.update(name for name in names if name)

    def _function(self, node: FunctionNode, name: str, work: Work) -> None:
        qualname = ".".join([*self.stack, name])
        fid = function_id(node, qualname)
        self.module.by_node[node] = fid
        self.module.nodes[fid] = node
        self.module.declared_in[fid] = self.fid
        if self.classes and self.classes[-1] == len(self.stack) - 1:
            self.module.owners[fid] = self.stack[-1]
        outer: list[ast.AST] = []  # evaluated in the enclosing scope
        if not isinstance(node, ast.Lambda):
            self._define(node.name)
            self.scopes[-1].assigned.add(node.name)
            self.function_names.add(node.name)
            if node.decorator_list:
                self.marked.update(self.inside)
            outer += node.decorator_list
            outer += [node.returns] if node.returns is not None else []
        outer.append(node.args)  # defaults and annotations
        body: list[ast.AST] = [node.body] if isinstance(node, ast.Lambda) else list(node.body)

        def enter() -> None:
            self.stack.append(name)
            self.scopes.append(self.module.scope(fid))
            self.inside, self.fid = (*self.inside, fid), fid

        def leave() -> None:
            self.inside = self.inside[:-1]
            self.fid = self.inside[-1] if self.inside else "<module>"
            self.scopes.pop()
            self.stack.pop()

        work.append(leave)
        work.extend(reversed(body))
        work.append(enter)
        work.extend(reversed(outer))

    def visit_FunctionDef(self, node: ast.FunctionDef, work: Work) -> None:
        self._function(node, node.name, work)

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef, work: Work) -> None:
        self._function(node, node.name, work)

    def visit_Lambda(self, node: ast.Lambda, work: Work) -> None:
        self._function(node, f"<lambda:{node.lineno}:{node.col_offset}>", work)

    def visit_ClassDef(self, node: ast.ClassDef, work: Work) -> None:
        self.module.classes.setdefault(node.name, node)
        self.marked.update(self.inside)
        self._define(node.name)
        self.scopes[-1].assigned.add(node.name)

        def enter() -> None:
            self.classes.append(len(self.stack))
            self.stack.append(node.name)
            # A class body binds no local of the enclosing function; its code is the function's.
            outer = self.scopes[-1]
            self.scopes.append(
                Scope(names=outer.names, attributes=outer.attributes, calls=outer.calls)
            )

        def leave() -> None:
            self.scopes.pop()
            self.stack.pop()
            self.classes.pop()

        work.append(leave)
        work.extend(reversed(node.body))
        work.append(enter)
        work.extend(reversed([*node.decorator_list, *node.bases, *node.keywords]))

    def visit_ExceptHandler(self, node: ast.ExceptHandler, work: Work) -> None:
        self._define(node.name)
        push_children(node, work.append)

    def visit_MatchAs(self, node: ast.MatchAs | ast.MatchStar, work: Work) -> None:
        self._define(node.name)
        push_children(node, work.append)

    visit_MatchStar = visit_MatchAs

    def visit_MatchMapping(self, node: ast.MatchMapping, work: Work) -> None:
        self._define(node.rest)
        push_children(node, work.append)

    def visit_Import(self, node: ast.Import | ast.ImportFrom, work: Work) -> None:
        # Imports anywhere count for the module's names: resolved flow-insensitively.
        self.module.imports.update(import_bindings(node, self.module.name, self.is_package))
        bound = {(a.asname or a.name).split(".", 1)[0] for a in node.names}
        self.scopes[-1].assigned |= bound
        self._define(*bound)

    visit_ImportFrom = visit_Import

    def visit_Global(self, node: ast.Global | ast.Nonlocal, work: Work) -> None:
        self.scopes[-1].declared.update(node.names)
        if isinstance(node, ast.Global):
            self.names.defines.update(node.names)

    visit_Nonlocal = visit_Global

    def visit_Attribute(self, node: ast.Attribute, work: Work) -> None:
        self.scopes[-1].attributes.add(node.attr)
        if type(node.ctx) is ast.Store:
            self.module.indexed.append((node, self.fid, self.statement))
        work.append(node.value)

    def visit_AnnAssign(self, node: ast.AST, work: Work) -> None:
        self.module.binders.append(node)
        push_children(node, work.append)

    visit_AugAssign = visit_For = visit_AsyncFor = visit_comprehension = visit_AnnAssign
    visit_withitem = visit_AnnAssign

    def visit_Assign(self, node: ast.Assign, work: Work) -> None:
        self.scopes[-1].assigns.append(node)
        self.module.binders.append(node)
        if isinstance(node.value, ast.Lambda):
            self.function_names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        push_children(node, work.append)

    def visit_Call(self, node: ast.Call, work: Work) -> None:
        self.scopes[-1].calls.append(node)
        if self.inside:
            self.calls.append((node, self.inside))
        PUSHERS[ast.Call](node, work.append)

    def applying(self, transforms: Mapping[str, TransformSpec]) -> set[str]:
        """The functions that must be interpreted for the module's transforms to be seen: those
        whose body (or a nested function's) calls a transform, hands a function on (it may be
        a wrapper that applies one), or defines a decorated function or a class."""
        found = set(self.marked)
        for call, fids in self.calls:
            if not found.issuperset(fids) and self._may_apply(call, fids, transforms):
                found.update(fids)
        return found

    def _may_apply(
        self, call: ast.Call, fids: tuple[str, ...], transforms: Mapping[str, TransformSpec]
    ) -> bool:
        hands_on: bool | None = None  # asked only when the call is given a function
        expr: Any
        for expr in [call.func, *call.args, *(k.value for k in call.keywords)]:
            kind = type(expr)  # exact classes: the parser makes no subclass
            if kind is ast.Starred:
                expr = expr.value
                kind = type(expr)
            if kind is ast.Lambda:
                parts = None
            elif kind is ast.Name or kind is ast.Attribute:
                if kind is ast.Attribute and expr.attr in CUSTOM_RULE_METHODS:
                    return True
                parts = dotted(expr)
                if parts is None:
                    continue
            else:  # a literal, a call, an operation: names nothing (`dotted` is None)
                continue
            if expr is not call.func and (parts is None or parts[-1] in self.function_names):
                if hands_on is None:
                    hands_on = self._may_wrap(call.func, fids)
                if hands_on:
                    return True
            if parts is None:
                continue
            head = self.module.imports.get(parts[0])  # `Module.import_name`, from the parts
            if head is not None and ".".join([head, *parts[1:]]) in transforms:
                return True
        return False

    def _may_wrap(self, func: ast.expr, fids: tuple[str, ...]) -> bool:
        """Whether a function handed to a call of `func` (in the functions `fids`) may come
        back transformed: `func` may be a wrapper of the module (`compiled(step)`), another
        name for a transform, or a maker of functions (`functools.partial(step, n)`); not
        another callable that an import or the builtins name (`jnp.where`, `map`), which
        never makes an entry (a transform is caught by its own name)."""
        parts = dotted(func)
        if parts is None or any(parts[0] in self.module.scope(f).assigned for f in fids):
            return True
        imported = self.module.import_name(func)
        if imported is not None:
            return imported in FUNCTION_MAKERS
        return parts[0] in self.module.scope("<module>").assigned or parts[0] not in _BUILTINS


def methods_by_type(owner: type, prefix: str) -> dict[type, Callable[..., Any]]:
    """`owner`'s method for each kind of node that has one (`visit_Call`, `s_If`, `e_Call`),
    by the node's class: looked up once, not by name at each node. Functions, not bound
    methods: held by an instance, they would make it a reference cycle, and its whole syntax
    tree garbage for the cycle collector."""
    return {
        kind: getattr(owner, prefix + name)
        for name, kind in vars(ast).items()
        if isinstance(kind, type) and hasattr(owner, prefix + name)
    }


_HANDLERS = methods_by_type(_Declarations, "visit_")


def _static_fields(module: Module) -> set[str]:
    """Attribute names the module's pytree classes declare as metadata: never traced."""
    return static_attribute_names(module)


def _passed_instances(module: Module) -> dict[str, dict[str, str]]:
    """Parameters that every call of their function in the module gives an instance of the
    same class of the module: `C(...)`, a name bound only to it, or such a parameter handed on;
    or a list or tuple of such instances only (`[C(...), C(...)]`: the class, then `ELEMENTS`);
    or any other list or tuple display or list comprehension (`SEQUENCE`). A call through a
    transform (`eqx.filter_grad(loss)(model, x)`) counts as a call, and a call of a class
    as one of its `__init__`."""
    names = {
        node.name: fid for fid, node in module.nodes.items() if not isinstance(node, ast.Lambda)
    }
    names = _transformed_aliases(module, names) | names
    inits = _initializers(module)
    calls: list[tuple[str, ast.Call, str, list[str]]] = []  # caller, call, callee, positional
    for fid, scope in module.scopes.items():
        for call in scope.calls:
            func = (
                call.func.args[0]
                if isinstance(call.func, ast.Call) and call.func.args
                else call.func
            )
            callee = (
                names.get(func.id)
                if isinstance(func, ast.Name) and call.args
                else module.by_node.get(func)
                if isinstance(func, ast.Lambda) and call.args
                else None
            )
            if callee is not None:
                calls.append((fid, call, callee, params_of(module.nodes[callee])[1]))
            elif isinstance(func, ast.Name) and call.args and func.id in inits:
                init = inits[func.id]  # `C(x)` gives `x` to the second parameter of `__init__`
                calls.append((fid, call, init, params_of(module.nodes[init])[1][1:]))
    if not calls:
        return {}
    # What each name handed to those calls is bound to (the others are never asked about).
    handed = {arg.id for _, call, _, _ in calls for arg in call.args if type(arg) is ast.Name}
    bound: dict[tuple[str, str], set[str | None]] = {}  # (function id, name) -> classes
    for fid, scope in module.scopes.items():
        for assign in scope.assigns:
            kept = [n for target in assign.targets for n in names_bound(target) if n in handed]
            if kept:
                made = _made(assign.value, module)
                for name in kept:
                    bound.setdefault((fid, name), set()).add(made)
    found: dict[str, dict[str, str]] = {}
    # A sequence only where no call gives the parameter anything else: not by keyword, after
    # a starred argument, or as another expression (which an instance's class ignores).
    others = {
        (callee, param)
        for _, call, callee, positional in calls
        for param in _given_otherwise(call, positional, module)
    }
    for _ in range(4):  # instances handed on through a chain of calls
        given: dict[tuple[str, str], set[str | None]] = {}
        for caller, call, callee, positional in calls:
            for index, arg in enumerate(call.args[: len(positional)]):
                key = (callee, positional[index])
                if isinstance(arg, ast.Name):
                    classes = (
                        bound.get((caller, arg.id)) or bound.get(("<module>", arg.id)) or {None}
                    )
                    held = found.get(caller, {}).get(arg.id)
                    given.setdefault(key, set()).update({held} if held else classes)
                elif (made := _made(arg, module)) is not None:  # `step(MLP(...), x)`
                    given.setdefault(key, set()).add(made)
        new: dict[str, dict[str, str]] = {}
        for (fid, param), classes in given.items():
            if SEQUENCE in classes and (fid, param) in others:
                continue
            if len(classes) == 1 and None not in classes:
                new.setdefault(fid, {})[param] = next(iter(c for c in classes if c))
        if new == found:
            break
        found = new
    return found


def _transformed_aliases(module: Module, names: Mapping[str, str]) -> dict[str, str]:
    """Module-level names bound once to a transform that keeps its function's parameters,
    applied to a function of the module (`solve = jax.jit(run)`, `jax.jit(lambda k, x: ...)`),
    each with that function's id: a call of the name is a call of the function."""
    bound: dict[str, list[ast.expr]] = {}
    for assign in module.scope("<module>").assigns:
        for target in assign.targets:
            for name in names_bound(target):
                bound.setdefault(name, []).append(assign.value)
    found: dict[str, str] = {}
    for name, values in bound.items():
        value = values[0] if len(values) == 1 else None
        if not isinstance(value, ast.Call) or not value.args:
            continue
        if module.import_name(value.func) not in SAME_PARAMETERS:
            continue
        function = value.args[0]
        if isinstance(function, ast.Lambda):
            fid = module.by_node.get(function)
        else:
            fid = names.get(function.id) if isinstance(function, ast.Name) else None
        if fid is not None:
            found[name] = fid
    return found


def whole_module(module: Module) -> WholeModule:
    """What the analysis of a part of `module` must be told of the whole (`jaxfix.models.parts`)."""
    static_fields = module.static_fields if module.whole_read else _static_fields(module)
    instance_params = module.instance_params if module.whole_read else _passed_instances(module)
    return WholeModule(
        tuple(sorted(static_fields)),
        tuple((fid, tuple(sorted(ps.items()))) for fid, ps in sorted(instance_params.items())),
    )


def _given_otherwise(call: ast.Call, positional: list[str], module: Module) -> set[str]:
    """The parameters of `positional` that `call` may give something other than a name or
    what `_made` knows: by keyword, after a starred argument or `**`, or another expression."""
    if any(isinstance(a, ast.Starred) for a in call.args) or any(
        k.arg is None for k in call.keywords
    ):
        return set(positional)
    found = {k.arg for k in call.keywords if k.arg is not None}
    for index, arg in enumerate(call.args[: len(positional)]):
        if not isinstance(arg, ast.Name) and _made(arg, module) is None:
            found.add(positional[index])
    return found


def _initializers(module: Module) -> dict[str, str]:
    """The `__init__` of each class of the module that defines one, by the class's name."""
    found: dict[str, str] = {}
    for name, cls in module.classes.items():
        if name in module.imports:
            continue
        for statement in cls.body:
            if isinstance(statement, ast.FunctionDef) and statement.name == "__init__":
                fid = module.by_node.get(statement)
                if fid is not None and not statement.decorator_list:
                    found[name] = fid
    return found


def _made(value: ast.expr, module: Module) -> str | None:
    """`C` for `C(...)`, `C[]` (`ELEMENTS`) for a list or tuple display of `C(...)` only,
    where C is a class of the module; `SEQUENCE` for another list or tuple display (no
    starred element) or list comprehension."""
    if isinstance(value, ast.List | ast.Tuple) and value.elts:
        made = {_class_made(element, module) for element in value.elts}
        if len(made) == 1 and None not in made:
            return f"{made.pop()}{ELEMENTS}"
        starred = any(isinstance(element, ast.Starred) for element in value.elts)
        return None if starred else SEQUENCE
    if isinstance(value, ast.ListComp):
        return SEQUENCE
    return _class_made(value, module)


def _class_made(value: ast.expr, module: Module) -> str | None:
    """`C` for `C(...)` where C is a class of the module."""
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Name):
        name = value.func.id
        if name in module.classes and name not in module.imports:
            return name
    return None


# Decorators that make a class's annotated names its fields, filled by its constructor.
_RECORD_DECORATORS = ("dataclass",)
RECORD_BASES = frozenset({"typing.NamedTuple", "NamedTuple"})


def is_record_class(cls: ast.ClassDef, module: Module) -> bool:
    """A dataclass (`@dataclass`, `@dataclasses.dataclass(frozen=True)`, `@flax.struct.dataclass`,
    `@chex.dataclass`) or a `typing.NamedTuple`: its constructor stores what it is given."""
    for decorator in cls.decorator_list:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        if qualified_name(target, module).rsplit(".", 1)[-1] in _RECORD_DECORATORS:
            return True
    return any(qualified_name(base, module) in RECORD_BASES for base in cls.bases)


# The last transform table's items, as a set: most analyses of a run get the same table.
_last_items: tuple[Mapping[str, TransformSpec], frozenset[tuple[str, TransformSpec]]] | None = None


def transform_items(
    transforms: Mapping[str, TransformSpec],
) -> frozenset[tuple[str, TransformSpec]]:
    """The items of `transforms`, which key the last analysis and walk: hashed once for the
    same table (each spec's hash is a dataclass' own, in Python)."""
    global _last_items
    last = _last_items
    if last is None or last[0] is not transforms:
        last = _last_items = (transforms, frozenset(transforms.items()))
    return last[1]


def names_a_transform(module: Module, transforms: frozenset[str]) -> bool:
    """Whether the module reads a name an import binds to one of `transforms`, a module base
    that traces, or a module (or object) that holds one: only through such a name can a
    value of the analysis be a transform (`Value.qualified` comes from the imports)."""
    holders = _holders(transforms)
    return any(
        module.imports[name] in holders for name in module.names_read if name in module.imports
    )


@functools.lru_cache(maxsize=8)
def _holders(transforms: frozenset[str]) -> frozenset[str]:
    """The transforms, the module bases that trace, and every dotted prefix of their names
    (`jax.lax.scan`: `jax.lax`, `jax`)."""
    names = transforms | TRACED_MODULE_BASES
    return frozenset(
        name.rsplit(".", cut)[0] for name in names for cut in range(name.count(".") + 1)
    )


# Callables of other modules whose result is the function they are given, bound or named.
FUNCTION_MAKERS = frozenset({PARTIAL} | CALL_WRAPPERS)
