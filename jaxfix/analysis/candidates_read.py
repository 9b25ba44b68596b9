"""Reading a file into its `Candidates` (`jaxfix.analysis.candidates`): one pass over the nodes
the analysis' walk indexed, in its order, noting the functions, calls, stores, keys and
imports the rules can report at; kept for the next analysis of the same tree."""

from __future__ import annotations

import ast
from collections.abc import Collection, Iterator
from dataclasses import replace
from typing import Any, cast

from jaxfix.analysis.candidates import (
    DISPLAYS,
    FUNCTIONS,
    CandidateCall,
    CandidateFunction,
    Candidates,
    full_names,
)
from jaxfix.analysis.file import FileAnalysis
from jaxfix.analysis.statements import names_bound
from jaxfix.models.transforms import TRANSFORMS

_STATIC_KEYWORDS = frozenset({"static_argnums", "static_argnames"})


# The last candidates: they depend on the tree alone, and a file that other modules trace is
# analysed again in each round of tracing across modules (`jaxfix.run.batch`), with the same tree
# (`jaxfix.run.engine` keeps the last one parsed) and another analysis.
_last_found: tuple[ast.Module, frozenset[str], Candidates] | None = None


def collect(
    tree: ast.Module, analysed: FileAnalysis, transforms: Collection[str] = TRANSFORMS
) -> Candidates:
    """The file's candidates, from the nodes the analysis' walk indexed (`Module.indexed`);
    `transforms` are the full names of the functions that trace what they receive. Those of
    the last tree are kept for its next analysis."""
    global _last_found
    key = frozenset(transforms)
    last = _last_found
    if last is not None and last[0] is tree and last[1] == key:
        return replace(last[2], analysed=analysed, _traced=None)
    found = _read(analysed, transforms)
    _last_found = (tree, key, found)
    return found


def _read(analysed: FileAnalysis, transforms: Collection[str]) -> Candidates:
    """The candidates among the indexed nodes, in the order of the analysis' walk (a node
    after the nodes that hold it). Each top-level statement's `Bindings`, which the slice
    needs, come from the analysis too."""
    found = Candidates(transforms=transforms, analysed=analysed)
    module = analysed.facts.module
    found.bindings = module.statement_names
    owners: dict[str, CandidateFunction] = {}  # function id -> its candidates' function
    lambda_names: dict[ast.Lambda, set[str]] = {}
    framework_classes: dict[ast.stmt, str | None] = {}  # their methods -> `self`
    # Told apart by the node's exact class (the parser makes no subclass), most common first:
    # a third of the time of `isinstance` tests down a chain.
    node: Any
    for node, fid, statement in module.indexed:
        kind = type(node)
        owner = owners.get(fid)
        if owner is not None and kind in _BINDER_KINDS:
            owner.binds.update(_bound_names(cast(ast.stmt, node)))
        if kind is ast.Call:
            found.calls.append(CandidateCall(node, owner, statement))
            found.key_sites.append((node, owner, statement))
        elif kind is ast.Assign:
            targets = {t.id for t in node.targets if type(t) is ast.Name}
            found.keyed_bindings.extend((name, node.value) for name in targets)
            value = node.value
            if type(value) is ast.Call and _static_keywords(value):
                found.static_jitted |= targets
            if type(value) is ast.Lambda:
                lambda_names[value] = targets
            elif type(value) in _DOTTED:  # `my_jit = jax.jit`
                aliased = full_names(value, found.imported)
                for name in targets if aliased else ():
                    found.imported[name] |= aliased
        elif kind in _ATTRIBUTES:
            root = _root_name(node) if type(node.ctx) is ast.Store else None
            if owner is not None and root is not None:
                owner.store_roots.add(root)
            if kind is ast.Subscript:
                found.key_sites.append((node, owner, statement))
        elif kind is ast.Expr:
            if type(node.value) is ast.Call:
                found.dropped.add(node.value)
        elif kind in FUNCTION_KINDS:
            function = CandidateFunction(
                statement, {node.name}, node, decorators=list(node.decorator_list)
            )
            function.binds.update(_plain_parameters(node.args))
            function.params = _parameters(node.args)
            _note_keyed(node, found)
            found.functions.append(function)
            function.framework_self = framework_classes.pop(node, None)
            owners[module.by_node[node]] = function
        elif kind is ast.Compare:
            if any(type(op) in _MEMBERSHIP for op in node.ops):
                found.key_sites.append((node, owner, statement))
        elif kind in _IMPORTS:
            _record_imports(node, found.imported)
        elif kind in _DISPLAYS:
            found.key_sites.append((node, owner, statement))
        elif kind is ast.AnnAssign:
            if type(node.target) is ast.Name:
                found.keyed_bindings.append((node.target.id, node.annotation))
                if node.value is not None:
                    found.keyed_bindings.append((node.target.id, node.value))
        elif kind in _LOOPS:
            if owner is not None:
                owner.loops.append(node)
        elif kind is ast.Lambda:
            function = CandidateFunction(statement, lambda_names.pop(node, set()), node)
            function.params = _parameters(node.args)
            found.functions.append(function)
            owners[module.by_node[node]] = function
        elif kind is ast.ClassDef:
            if not _may_be_plain(node, found):
                framework_classes.update(
                    (child, _first_parameter(child.args))
                    for child in node.body
                    if type(child) in FUNCTION_KINDS
                )
        elif kind in _WITHS:
            found.withs.setdefault(statement, []).append(node)
        elif kind in _DECLARATIONS and owner is not None:
            owner.declared = (owner.declared or set()) | set(node.names)
    return found


_BINDERS = (
    ast.Assign,
    ast.AnnAssign,
    ast.AugAssign,
    ast.For,
    ast.AsyncFor,
    ast.With,
    ast.AsyncWith,
)
# `_read`'s kinds of nodes, as sets of exact classes (the parser makes no subclass).
_BINDER_KINDS = frozenset(_BINDERS)
_ATTRIBUTES = frozenset({ast.Attribute, ast.Subscript})
_MEMBERSHIP = frozenset({ast.In, ast.NotIn})
_DOTTED = frozenset({ast.Name, ast.Attribute})
_IMPORTS = frozenset({ast.Import, ast.ImportFrom})
_LOOPS = frozenset({ast.For, ast.AsyncFor})
_DECLARATIONS = frozenset({ast.Global, ast.Nonlocal})
_WITHS = frozenset({ast.With, ast.AsyncWith})
_DISPLAYS = frozenset(DISPLAYS)
FUNCTION_KINDS = frozenset(FUNCTIONS)


def _bound_names(node: ast.stmt) -> Iterator[str]:
    """The names an assignment, a `for` or a `with` binds in the function holding it."""
    if isinstance(node, ast.Assign):
        targets: list[ast.expr] = list(node.targets)
    elif isinstance(node, ast.With | ast.AsyncWith):
        targets = [item.optional_vars for item in node.items if item.optional_vars is not None]
    else:
        assert isinstance(node, ast.AnnAssign | ast.AugAssign | ast.For | ast.AsyncFor)
        targets = [node.target]
    for target in targets:
        yield from names_bound(target)


def _plain_parameters(args: ast.arguments) -> Iterator[str]:
    """Parameters that only hold what each call passes: not the first (`self`), and without a
    default (a mutable default outlives the calls)."""
    positional = [*args.posonlyargs, *args.args]
    with_default = len(args.defaults)
    yield from (a.arg for a in positional[1 : len(positional) - with_default])
    yield from (a.arg for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True) if d is None)
    yield from (a.arg for a in (args.vararg, args.kwarg) if a is not None)


def _root_name(expr: ast.expr) -> str | None:
    """`a` for `a`, `a.b.c` and `a[0].b`; None for any other base (a call, a literal)."""
    while isinstance(expr, ast.Attribute | ast.Subscript):
        expr = expr.value
    return expr.id if isinstance(expr, ast.Name) else None


def _parameters(args: ast.arguments) -> set[str]:
    every = (*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg)
    return {arg.arg for arg in every if arg is not None}


def _note_keyed(node: ast.FunctionDef | ast.AsyncFunctionDef, found: Candidates) -> None:
    """A function's parameters annotated as dicts or sets, and whether it is jitted with
    static arguments (`@partial(jax.jit, static_argnums=1)`)."""
    args = node.args
    for arg in (*args.posonlyargs, *args.args, *args.kwonlyargs):
        if arg.annotation is not None:
            found.keyed_bindings.append((arg.arg, arg.annotation))
    if any(_static_keywords(decorator) for decorator in node.decorator_list):
        found.static_jitted.add(node.name)


def _static_keywords(expr: ast.expr) -> bool:
    """A call with static arguments in `expr`'s calls and their callees and arguments
    (`partial(jax.jit, static_argnums=1)(f)`, `checkify(jit(f, static_argnames="n"))`), without
    walking the displays in between (a module's table of constants)."""
    stack = [expr]
    while stack:
        node = stack.pop()
        if not isinstance(node, ast.Call):
            continue
        if any(k.arg in _STATIC_KEYWORDS for k in node.keywords):
            return True
        stack.append(node.func)
        stack.extend(node.args)
    return False


# Bases a plain class may have (what JF103 calls plain: `self` outlives the trace).
_PLAIN_BASES = frozenset({"object", "ABC", "Generic"})


def _may_be_plain(cls: ast.ClassDef, found: Candidates) -> bool:
    """No decorator, no keyword, and only bases that may be plain: `object`, `ABC`,
    `Generic[...]`, or a class of the file (not an import)."""
    if cls.decorator_list or cls.keywords:
        return False
    for base in cls.bases:
        if isinstance(base, ast.Subscript):
            base = base.value
        name = base.attr if isinstance(base, ast.Attribute) else getattr(base, "id", None)
        if name in _PLAIN_BASES:
            continue
        if not isinstance(base, ast.Name) or base.id in found.imported:
            return False
    return True


def _first_parameter(args: ast.arguments) -> str | None:
    positional = [*args.posonlyargs, *args.args]
    return positional[0].arg if positional else None


def _record_imports(node: ast.Import | ast.ImportFrom, imported: dict[str, set[str]]) -> None:
    if isinstance(node, ast.Import):
        for alias in node.names:
            if alias.asname:
                imported[alias.asname].add(alias.name)
            else:
                head = alias.name.split(".")[0]
                imported[head].add(head)
        return
    module = "." * node.level + (f"{node.module}." if node.module else "")
    for alias in node.names:
        imported[alias.asname or alias.name].add(module + alias.name)
