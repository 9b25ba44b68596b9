"""What the analysis knows of one module: each function's summary (what its calls, stores and
subscripts receive and what it returns, as conditions on its parameters), the scopes, the
entries of transforms, and how a call binds a summary's parameters (`bind_arguments`,
`substitute`)."""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import NamedTuple

from jaxfix.analysis import values as v
from jaxfix.analysis.names import dotted
from jaxfix.analysis.reasons import Reason, Via
from jaxfix.analysis.values import (
    STATIC,
    Kind,
    Param,
    Source,
    Staged,
    Value,
)

FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda


class Call(NamedTuple):
    """A call in a function body and what it receives (a named tuple, like `Value`)."""

    node: ast.Call
    caller: str  # the FunctionId of the function whose body holds it
    callee: str | None  # its full name through imports (`pickle.dumps`), when known
    target: str | None  # the FunctionId of a function of the module it calls
    method: str | None  # `m` of `receiver.m(...)`
    receiver: Value | None
    args: tuple[Value, ...]
    keywords: Mapping[str, Value]
    guarded: bool  # under a tracer guard or a `try:` catching concretization errors
    bound: int = 0  # leading parameters bound before the call (`self`, `partial`)
    # Functions handed to an unknown callable: it may apply them to the data it is given.
    applied: tuple[Value, ...] = ()
    # In a `raise` or `assert` statement: it builds an error (its message), if anything.
    raising: bool = False

    def values(self) -> Iterator[Value]:
        yield from self.args
        yield from self.keywords.values()


@dataclass(frozen=True)
class Store:
    """`root.attr = value`, `root[key] = value` or an assignment to a `global`/`nonlocal` name."""

    node: ast.stmt
    caller: str
    root: str
    value: Value
    # The root is no local variable of the function: a global, a closure's name, `self`, a
    # parameter with a default (not another parameter: its object is the caller's).
    outlives: bool
    guarded: bool


@dataclass(frozen=True)
class Entry:
    """A transform applied to a function of the module: which parameters it traces."""

    node: ast.AST
    caller: str  # the function whose body holds the transform (or the module)
    transform: str
    target: str
    traced: frozenset[str]
    staged: bool
    reason: Reason = field(default_factory=lambda: Reason(Via.PASSED))
    static: frozenset[str] = frozenset()  # its static parameters (`static_argnums`)
    positional: tuple[str, ...] = ()  # the positions `static_argnums` counts
    # For a bound method (`jax.vmap(model)`): `self` is traced when one of these is.
    receiver: frozenset[Source] = frozenset()
    # For a custom derivative rule (`f.defjvp(rule)`): the primal `f`, whose derivative it is.
    primal: str | None = None
    # The parameters `functools.partial` binds to a value that is certainly not None.
    not_none: frozenset[str] = frozenset()


@dataclass(frozen=True)
class ImportedEntry:
    """A transform applied to a function imported from another module (`jax.grad(loss)`
    after `from .losses import loss`): the run enters it there (`jaxfix.analysis.project`).
    `positions` are the positions it traces (`argnums`), None for every parameter from
    `bound` on (those before are bound by `partial`) but the static ones: its static
    arguments, those `in_axes` leaves unbatched and those `partial` binds."""

    qualified: str  # the function's full name through the imports
    transform: str
    caller: str  # the id of the function whose code applies the transform
    positions: tuple[int, ...] | None
    staged: bool
    bound: int = 0
    static_positions: tuple[int, ...] = ()
    static_names: tuple[str, ...] = ()


@dataclass
class Summary:
    """What a function does with its parameters, computed once for every caller."""

    id: str
    node: FunctionNode | ast.Module
    name: str
    params: list[str]
    positional: list[str]
    parent: str | None  # the enclosing function's id (closures)
    class_name: str | None  # the class whose body defines it (a method)
    calls: list[Call] = field(default_factory=list)
    stores: list[Store] = field(default_factory=list)
    returns: Value | None = None
    values: dict[ast.AST, Value] = field(default_factory=dict)
    # It certainly raises when one of these (its parameters traced, its staging) holds: every
    # way out of it but a raise runs only when none does (`jaxfix.analysis.reach`).
    raises_if: frozenset[Source] = frozenset()
    # Whether some branch of it runs only when a parameter is given None (`if k is None:`).
    none_tested: bool = False


@dataclass
class Bindings:
    """The module-level names one top-level statement binds, and every name it reads (in
    nested code too): what decides which statements a slice of the file keeps."""

    defines: set[str] = field(default_factory=set)
    mentions: set[str] = field(default_factory=set)


@dataclass
class Scope:
    """What one function's own body does (not its nested functions'): the names it binds, the
    names it declares `global` / `nonlocal`, its assignments and calls, and the names and
    attribute names its code mentions (a class body's count for the function defining it)."""

    assigned: set[str] = field(default_factory=set)
    declared: set[str] = field(default_factory=set)
    assigns: list[ast.Assign] = field(default_factory=list)
    calls: list[ast.Call] = field(default_factory=list)
    names: set[str] = field(default_factory=set)
    attributes: set[str] = field(default_factory=set)


# The classes of the run's other modules that declare pytree metadata fields, as a module
# imports them (`brax.base.System`, `.base.System`), with those fields.
StaticClasses = tuple[tuple[str, tuple[str, ...]], ...]


@dataclass
class Module:
    """Every function's summary, the transforms applied in the module, its import names."""

    name: str
    tree: ast.Module
    imports: dict[str, str]
    functions: dict[str, Summary] = field(default_factory=dict)
    entries: list[Entry] = field(default_factory=list)
    classes: dict[str, ast.ClassDef] = field(default_factory=dict)
    static_fields: set[str] = field(default_factory=set)  # pytree metadata, by attribute name
    # Parameters the module's calls give instances of one of its classes only (`make_step(
    # model, x)` with `model = MLP(...)`): function id -> parameter -> class name.
    instance_params: dict[str, dict[str, str]] = field(default_factory=dict)
    # class -> attribute -> the module's class every method's `self.<attribute> = C(...)`
    # makes an instance of, None when another value is assigned (found on demand).
    attribute_instances: dict[str, dict[str, str | None]] = field(default_factory=dict)
    # class -> the attributes every method's `self.<attribute> = ...` gives a jax array
    # (`jnp.int32(0)`, `self.count + 1`), found on demand.
    array_attributes: dict[str, frozenset[str]] = field(default_factory=dict)
    # The classes of other modules of the run with metadata fields, by their names as the
    # module imports them (`brax.base.System`, `.base.System`): their static fields.
    static_classes: dict[str, frozenset[str]] = field(default_factory=dict)
    # What the analysis asked of `static_classes`, whatever the answer: whether it holds a
    # class (`C`), whether a class' fields there hold a name (`C field`). Given other static
    # classes that answer each the same (`project.answers_alike`), the module's analysis is
    # this one, step for step.
    static_queries: set[str] = field(default_factory=set)
    # The module's classes whose every field is metadata (found on demand: `pytree_fields`).
    metadata_only: frozenset[str] | None = None
    whole_read: bool = False  # the two above were drawn from the walk (not for every module)
    by_node: dict[ast.AST, str] = field(default_factory=dict)  # function node -> its id
    nodes: dict[str, FunctionNode] = field(default_factory=dict)  # id -> function node
    owners: dict[str, str] = field(default_factory=dict)  # a method's id -> its class's name
    transformed: set[str] = field(default_factory=set)  # ids of the entries' targets
    imported_entries: list[ImportedEntry] = field(default_factory=list)
    final_env: dict[str, Value] = field(default_factory=dict)  # module names at its end
    # Module-level functions are interpreted once the module's names are known, on demand
    # (a caller needs its callee's summary first); a cycle leaves the inner one unknown.
    pending: dict[str, Callable[[], None]] = field(default_factory=dict)
    scopes: dict[str, Scope] = field(default_factory=dict)
    names_read: set[str] = field(default_factory=set)  # every name read anywhere
    statement_names: list[Bindings] = field(default_factory=list)  # one per top-level statement
    # The function whose body defines each function (`<module>` at top level, the enclosing
    # function of a class body), and the functions whose body (or a nested one) may apply a
    # transform: those are interpreted even when nothing traces them.
    declared_in: dict[str, str] = field(default_factory=dict)
    applying: set[str] = field(default_factory=set)
    # Expressions under a tracer guard or in a `try:` catching concretization errors: code
    # that knows what it holds, which rules leave alone.
    guarded: set[ast.AST] = field(default_factory=set)
    # The nodes (expressions, statements that store) that run only when none of some facts
    # holds, each with the function whose body holds it and those facts: the code after
    # `if isinstance(q, Tracer): raise ...` runs only when `q` is no tracer
    # (`jaxfix.analysis.reach`). Only such nodes are here.
    conditions: dict[ast.AST, tuple[str, frozenset[Source]]] = field(default_factory=dict)
    # Attribute names its classes declare with a type that excludes None (`reach`).
    required_fields: frozenset[str] | None = None
    # Every statement or clause that binds a value (assignments, `for`, comprehensions, `with
    # ... as`), anywhere in the module, in the order of the walk.
    binders: list[ast.AST] = field(default_factory=list)
    # Every node of the kinds in `INDEXED`, in the order of the walk, with the id of the
    # function whose body holds it and the index of its top-level statement.
    indexed: list[tuple[ast.AST, str, int]] = field(default_factory=list)
    # Functions being interpreted now, and whether a call reached one of them that is no
    # enclosing function and not in a cycle `cycles` found: its value then depends on the order
    # the summaries were asked for (see `Interpreter._apply`).
    running: set[str] = field(default_factory=set)
    order_dependent: bool = False
    _cycles: dict[str, int] | None = None
    # How many transforms `analyse` found; whether the last `analyse` reused this module.
    entries_found: int = 0
    reused: bool = False
    # The module-level `def`s by name (found when another module's call first asks).
    top_level: dict[str, list[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]] | None = None
    _values: dict[ast.AST, Value] = field(default_factory=dict)
    _names_tracer_test: bool | None = None
    _values_of: int = 0  # how many summaries `_values` holds the values of

    def scope(self, fid: str) -> Scope:
        """What the body of `fid` binds, declares, assigns and calls."""
        return self.scopes.setdefault(fid, Scope())

    def import_name(self, node: ast.expr) -> str | None:
        """The full name of a dotted name whose first name an import binds (`lax.scan` ->
        `jax.lax.scan`); None otherwise."""
        parts = dotted(node)
        head = self.imports.get(parts[0]) if parts else None
        return ".".join([head, *parts[1:]]) if parts and head is not None else None

    def value_of(self, node: ast.AST) -> Value | None:
        """The value of an expression where it stands (None when no function evaluated it)."""
        if self._values_of != len(self.functions):
            self._values_of = len(self.functions)
            for summary in self.functions.values():
                self._values.update(summary.values)
        return self._values.get(node)

    def in_cycle(self, caller: str, callee: str) -> bool:
        """Whether two functions may call each other (directly, through others or through the
        functions they define), by the names their code mentions: a call between them is left
        unknown, so that a summary never depends on which of them was asked for first."""
        if self._cycles is None:
            self._cycles = call_cycles(self)
        found = self._cycles.get(caller)
        return found is not None and found == self._cycles.get(callee)

    def reusable(self) -> bool:
        """Whether another trace may use these summaries as they are: none depends on the
        order they were asked for, and interpreting more of them found no transform that a
        fresh analysis would not know from the start."""
        return not self.order_dependent and len(self.entries) == self.entries_found

    def names_tracer_test(self) -> bool:
        """Whether a name or an attribute the module reads may ask about tracers
        (`TRACER_TEST`): else no test of it does (asked at each `if`)."""
        if self._names_tracer_test is None:
            names = self.names_read.union(*(scope.attributes for scope in self.scopes.values()))
            self._names_tracer_test = any(map(TRACER_TEST.search, names))
        return self._names_tracer_test

    def summary_of(self, fid: str) -> Summary | None:
        """The summary of `fid`, interpreting it now if it is still pending."""
        run = self.pending.pop(fid, None)
        if run is not None:
            run()
        return self.functions.get(fid)


def function_id(node: ast.AST, qualname: str) -> str:
    return f"{qualname}@{getattr(node, 'lineno', 0)}"


def params_of(node: FunctionNode) -> tuple[list[str], list[str]]:
    """All parameter names, and the positional ones in order."""
    a = node.args
    positional = [p.arg for p in [*a.posonlyargs, *a.args]]
    names = [*positional, *(p.arg for p in a.kwonlyargs)]
    names += [p.arg for p in (a.vararg, a.kwarg) if p is not None]
    return names, positional


def defaults_of(args: ast.arguments) -> dict[str, ast.expr]:
    """The parameters that have a default value, each with it."""
    positional = [*args.posonlyargs, *args.args]
    defaulted = positional[len(positional) - len(args.defaults) :]
    found = {p.arg: d for p, d in zip(defaulted, args.defaults, strict=True)}
    keywords = zip(args.kwonlyargs, args.kw_defaults, strict=True)
    return found | {p.arg: d for p, d in keywords if d is not None}


Env = dict[str, Value]


def parameter_value(param: Param) -> Value:
    """What a parameter holds as its function starts: a tracer when it is given one, the
    object it is given (a dict a flatten may reorder, when it is given one)."""
    return Value(Kind.TRACED, frozenset({param}), reorders=param)


def bind_arguments(summary: Summary, call: Call) -> dict[str, Value]:
    """The callee's parameters and the values `call` gives them."""
    given: dict[str, Value] = {}
    if summary.positional and summary.class_name and _decorated(summary.node, "classmethod"):
        # `cls` is the class whether the call goes through an instance or the class itself.
        given[summary.positional[0]] = STATIC
        positional = summary.positional[1:]
    else:
        positional = summary.positional[call.bound :]
        if call.bound and call.receiver is not None and summary.positional:
            given[summary.positional[0]] = call.receiver
    for name, value in zip(positional, call.args, strict=False):
        given[name] = value
    extra: list[Value] = []
    for keyword, value in call.keywords.items():
        if keyword in summary.params:
            given[keyword] = value
        else:
            extra.append(value)
    node = summary.node
    if not isinstance(node, ast.Module):
        # `*args` holds the positions past the named ones, `**kwargs` the other keywords
        # (`log(loss=x)` in `def log(self, **kw)`): traced when one of them is.
        rest = call.args[len(positional) :]
        if node.args.vararg is not None and rest:
            given[node.args.vararg.arg] = v.combine(rest)
        if node.args.kwarg is not None and extra:
            given[node.args.kwarg.arg] = v.combine(extra)
    return given


def substitute(value: Value, function: str, given: Mapping[str, Value], caller: str) -> Value:
    """`value` (of `function`) with its parameters' conditions replaced by what they are given."""
    found = _substituted(value, function, given, caller)
    mark = value.reorders  # a parameter's object: what the call gives it
    if isinstance(mark, Param) and mark.function == function:
        argument = given.get(mark.name)
        mark = argument.reorders if argument is not None else False
    return found if found.reorders == mark else found._replace(reorders=mark)


def _substituted(value: Value, function: str, given: Mapping[str, Value], caller: str) -> Value:
    if value.elements is not None:
        return Value(
            value.kind,
            elements=tuple(substitute(e, function, given, caller) for e in value.elements),
        )
    if value.fields is not None:
        fields = tuple((k, substitute(f, function, given, caller)) for k, f in value.fields)
        return value._replace(fields=fields)
    if value.kind is not Kind.TRACED:
        return value
    sources: set[v.Source] = set()
    for source in value.sources:
        if isinstance(source, Param) and source.function == function:
            argument = given.get(source.name)
            if argument is not None:
                sources |= v.sources_of([argument])
        elif isinstance(source, Staged) and source.function == function:
            sources.add(Staged(caller))
        else:
            sources.add(source)
    return v.traced(sources)


def outliving_params(summary: Summary) -> set[str]:
    """The parameters whose objects outlive a call: a method's `self`, and those with a
    default (a mutable default is shared by every call). Any other parameter's object is the
    caller's, whose own code decides whether it outlives the trace."""
    node = summary.node
    if isinstance(node, ast.Module):
        return set()
    found = set(defaults_of(node.args))
    if summary.positional and summary.class_name and not static_method(node, "classmethod"):
        found.add(summary.positional[0])
    return found


def call_cycles(module: Module) -> dict[str, int]:
    """The strongly connected components of more than one function of the graph "may call":
    `f` -> `g` when `f`'s own code mentions `g`'s name (or attribute name), and when `g` is
    defined in `f` (its body runs while `f` is interpreted). Each function of such a component,
    by the component's number (Tarjan's algorithm, without recursion)."""
    by_name: dict[str, list[str]] = {}
    for fid, function in module.nodes.items():
        if not isinstance(function, ast.Lambda):
            by_name.setdefault(function.name, []).append(fid)
    edges: dict[str, set[str]] = {fid: set() for fid in module.nodes}
    for fid, edge in edges.items():
        scope = module.scopes.get(fid)
        if scope is not None:
            for name in scope.names | scope.attributes:
                edge.update(by_name.get(name, ()))
        parent = module.declared_in.get(fid)
        if parent in edges:
            edges[parent].add(fid)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: dict[str, int] = {}
    for root in edges:
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            current, successors = work[-1]
            for successor in successors:
                if successor not in index:
                    index[successor] = low[successor] = len(index)
                    stack.append(successor)
                    on_stack.add(successor)
                    work.append((successor, iter(sorted(edges[successor]))))
                    break
                if successor in on_stack:
                    low[current] = min(low[current], index[successor])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[current])
                if low[current] == index[current]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == current:
                            break
                    if len(component) > 1:
                        found.update(dict.fromkeys(component, index[current]))
    return found


# A test that asks whether a value is a tracer (`isinstance(x, jax.core.Tracer)`,
# `core.is_concrete(x)`, `not_jax_tracer(x)`).
TRACER_TEST = re.compile("tracer|concrete", re.IGNORECASE)


def class_lineage(name: str, module: Module) -> Iterator[str]:
    """`name` and its bases that are classes of the module, by name (each once)."""
    seen: set[str] = set()
    todo = [name]
    while todo:
        current = todo.pop()
        if current in seen or current not in module.classes:
            continue
        seen.add(current)
        yield current
        todo.extend(b.id for b in module.classes[current].bases if isinstance(b, ast.Name))


def qualified_name(node: ast.expr, module: Module) -> str:
    """What `node` (a name or a dotted attribute) names through the module's imports
    (`np.save` -> `numpy.save`); empty when it is no such expression."""
    parts = dotted(node)
    if not parts:
        return ""
    head = module.imports.get(parts[0], parts[0])
    return ".".join([head, *parts[1:]])


def static_method(node: FunctionNode | ast.Module, *also: str) -> bool:
    """Whether `node` is a `@staticmethod` (or one of the decorators `also` names)."""
    return _decorated(node, "staticmethod", *also)


def _decorated(node: FunctionNode | ast.Module, *names: str) -> bool:
    """Whether `node` is a function decorated with one of the builtin decorators `names`."""
    return isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and any(
        isinstance(d, ast.Name) and d.id in names for d in node.decorator_list
    )
