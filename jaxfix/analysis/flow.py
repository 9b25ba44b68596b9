"""One pass over each function in statement order: its summary.

The body is interpreted abstractly (see `values`): a rebinding changes a name's value from that
statement on, `if`/`try` branches join, a branch that returns or raises does not reach the join,
loops run to a fixed point. Parameters are symbolic (`Param`), so the summary holds for every
caller: what each call, store and subscript receives, and what the function returns, as
conditions on its parameters. `jaxfix.analysis.tracing` later decides which conditions hold.

What is static whatever the parameters are: literals, `x.shape` / `dtype` / `ndim` / `size`,
`len()`, `jnp.result_type` / `finfo` / `iinfo`, NumPy computed from static values, attributes a
pytree class declares as metadata; inside `with jax.ensure_compile_time_eval():` nothing is
staged; after a tracer guard (`if isinstance(x, jax.core.Tracer): return ...`) `x` is concrete,
and code inside the guard or in a `try:` that catches the concretization errors is *guarded*:
rules leave it alone.
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import functools
import re
import threading
import weakref
from collections.abc import Callable, Collection, Iterator, Mapping
from dataclasses import dataclass, field, replace
from types import FunctionType
from typing import Any, NamedTuple, cast

from jaxfix.analysis import values as v
from jaxfix.analysis.names import dotted, import_bindings
from jaxfix.analysis.reasons import Reason, Via
from jaxfix.analysis.statements import names_bound
from jaxfix.analysis.values import (
    HOST,
    STATIC,
    UNKNOWN,
    Guard,
    Kind,
    Param,
    Source,
    Staged,
    Value,
)
from jaxfix.analysis.walk import PUSHERS, push_children
from jaxfix.models.parts import WholeModule
from jaxfix.models.transforms import (
    ABSTRACT_TRANSFORMS,
    CALL_WRAPPERS,
    CUSTOM_DERIVATIVES,
    CUSTOM_RULE_METHODS,
    HOST_CALLBACKS,
    PARTIAL,
    PYTHON_TYPES,
    STAGED_ARRAY_NAMESPACES,
    STATIC_ATTRIBUTES,
    STATIC_QUERIES,
    STRING_METHODS,
    TRACED_MODULE_BASES,
    TRANSFORMS,
    TransformSpec,
    Wrapped,
)

FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda
MAX_LOOP_ROUNDS = 8
_BUILTINS = frozenset(dir(builtins))
# A test that asks whether a value is a tracer (`isinstance(x, jax.core.Tracer)`,
# `core.is_concrete(x)`, `not_jax_tracer(x)`).
_TRACER_TEST = re.compile("tracer|concrete", re.IGNORECASE)
# Exceptions whose handler means the `try:` body expects tracers to fail there.
_CONCRETIZATION_ERRORS = re.compile(r"Concretization|Tracer\w*Error|TypeError|Exception")
# Builtins whose result is a Python value whatever they are given (some raise on a tracer:
# that is what `calls` records).
_PYTHON_VALUED = frozenset(
    {"builtins." + n for n in ("int", "float", "bool", "complex", "str", "repr", "hash", "id")}
    | {"builtins.len", "builtins.type", "builtins.isinstance", "builtins.callable"}
)
# Methods of an array that give a Python value (`x.item()`); the rest give arrays.
PYTHON_VALUED_METHODS = frozenset({"item", "tolist", "tobytes", "__array__", "__index__"})
_STATIC_FIELD_MAKERS = frozenset({"static_field", "field"})
COMPILE_TIME_EVAL = "jax.ensure_compile_time_eval"
# Builtins that give arrays (or containers of them) from arrays.
_ARRAY_BUILTINS = frozenset(
    f"builtins.{n}"
    for n in [
        "abs",
        "sum",
        "max",
        "min",
        "round",
        "pow",
        "divmod",
        "list",
        "tuple",
        "dict",
        "sorted",
        "reversed",
        "iter",
        "next",
    ]
)
_PYTHON_TYPE_NAMES = frozenset(
    {"type", "int", "float", "bool", "complex", "str", "bytes", "slice", "range", "dtype"}
    | {"generic", "Number", "Integral", "Real", "DType", "Enum", "NoneType"}
)
# Functions that give the concrete value of their argument or raise (`core.concrete_or_error`).
_CONCRETE_OR_RAISE = frozenset({"concrete_or_error", "concrete_dim_or_error"})
# Functions, of any module, whose names say they answer with a dtype (`dtypes.dtype(x)`,
# `jax.dtypes.canonicalize_dtype`, `np.result_type`): what jax's and NumPy's are called.
DTYPE_QUERIES = frozenset(
    {"dtype", "result_type", "canonicalize_dtype", "promote_types", "finfo", "iinfo"}
    | {"issubdtype", "isdtype", "can_cast"}
)
_STATIC_BY_NAME = _CONCRETE_OR_RAISE | DTYPE_QUERIES  # whatever module they come from
_ITERATORS = frozenset({"builtins.enumerate", "builtins.zip", "builtins.range"})
_DICT_VIEWS = frozenset({"items", "values"})
# Callables that run the functions they are given on the host, or bind them (no data flows).
_NOT_APPLYING = HOST_CALLBACKS | {PARTIAL} | CALL_WRAPPERS
# Callables of other modules whose result is the function they are given, bound or named.
_FUNCTION_MAKERS = frozenset({PARTIAL} | CALL_WRAPPERS)


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
    # Every statement or clause that binds a value (assignments, `for`, comprehensions, `with
    # ... as`), anywhere in the module, in the order of the walk.
    binders: list[ast.AST] = field(default_factory=list)
    # Every node of the kinds in `INDEXED`, in the order of the walk, with the id of the
    # function whose body holds it and the index of its top-level statement.
    indexed: list[tuple[ast.AST, str, int]] = field(default_factory=list)
    # Functions being interpreted now, and whether a call reached one of them that is no
    # enclosing function and not in a cycle `cycles` found: its value then depends on the order
    # the summaries were asked for (see `_Interpreter._apply`).
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
            self._cycles = _cycles(self)
        found = self._cycles.get(caller)
        return found is not None and found == self._cycles.get(callee)

    def reusable(self) -> bool:
        """Whether another trace may use these summaries as they are: none depends on the
        order they were asked for, and interpreting more of them found no transform that a
        fresh analysis would not know from the start."""
        return not self.order_dependent and len(self.entries) == self.entries_found

    def names_tracer_test(self) -> bool:
        """Whether a name or an attribute the module reads may ask about tracers
        (`_TRACER_TEST`): else no test of it does (asked at each `if`)."""
        if self._names_tracer_test is None:
            names = self.names_read.union(*(scope.attributes for scope in self.scopes.values()))
            self._names_tracer_test = any(map(_TRACER_TEST.search, names))
        return self._names_tracer_test

    def summary_of(self, fid: str) -> Summary | None:
        """The summary of `fid`, interpreting it now if it is still pending."""
        run = self.pending.pop(fid, None)
        if run is not None:
            run()
        return self.functions.get(fid)


def analyse(
    tree: ast.Module,
    module: str = "",
    *,
    is_package: bool = False,
    transforms: Mapping[str, TransformSpec] = TRANSFORMS,
    reuse: bool = True,
    traced_only: bool = False,
    whole: WholeModule | None = None,
) -> Module:
    """The module's analysis: the summaries of the module body (as `<module>`) and of the
    functions that may apply a transform; the others' on demand (`Module.summary_of`).
    `whole`: `tree` is a part of the module (`jaxfix.models.parts`), and this is what the whole
    module tells its analysis.
    With `traced_only` (only the module's own traced code will be asked about), a module
    that reads no name an import binds to a transform or to what holds one (`jax`, `lax`,
    `nn` for `nn.Module`) has no traced code, and nothing of it is interpreted.

    The last analysis of a tree (on this thread) is reused, with the summaries interpreted
    since, while it is `reusable`: a file that other modules trace is analysed again in each
    round of tracing across modules (`jaxfix.run.batch`), on the same tree (`jaxfix.run.engine`
    keeps the last one parsed), with other modules' calls into it (`reuse=False`: analyse
    afresh)."""
    key = (module, is_package, _items(transforms), traced_only, whole)
    last: tuple[ast.Module, tuple[object, ...], Module] | None = getattr(_last, "analysed", None)
    if reuse and last is not None and last[0] is tree and last[1] == key and last[2].reusable():
        last[2].reused = True
        return last[2]
    result, transforming = _declared(tree, module, is_package, transforms, traced_only, whole)
    if traced_only and not transforming:
        _last.analysed = (tree, key, result)
        return result
    # The interpreters hold the module weakly: it holds the pending ones (`Module.pending`),
    # and a reference cycle would leave the whole syntax tree to the cycle collector.
    held = cast(Module, weakref.proxy(result))
    top = _Interpreter(held, transforms, "<module>", tree, None, None, {})
    result.final_env = top.run()
    # The others are interpreted when the tracing finds them traced, or a caller needs them.
    for fid in [fid for fid in result.pending if fid in result.applying]:
        result.summary_of(fid)
    result.entries_found = len(result.entries)
    _last.analysed = (tree, key, result)
    return result


# The last transform table's items, as a set: most analyses of a run get the same table.
_last_items: tuple[Mapping[str, TransformSpec], frozenset[tuple[str, TransformSpec]]] | None = None


def _items(transforms: Mapping[str, TransformSpec]) -> frozenset[tuple[str, TransformSpec]]:
    """The items of `transforms`, which key the last analysis and walk: hashed once for the
    same table (each spec's hash is a dataclass' own, in Python)."""
    global _last_items
    last = _last_items
    if last is None or last[0] is not transforms:
        last = _last_items = (transforms, frozenset(transforms.items()))
    return last[1]


def _names_a_transform(module: Module, transforms: frozenset[str]) -> bool:
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


# The last analysis, per thread (the language server analyses documents on several).
_last = threading.local()


# The last tree's declarations: a file that other modules trace is analysed again on the same
# tree with more of their calls (`jaxfix.run.batch` rounds, `jaxfix.run.engine` keeps the tree).
# Only what the walk finds is shared; every analysis interprets the functions afresh (a summary a
# call cycle leaves unknown depends on the order the tracing asks for the summaries).
# The walk is kept until what only interpreting needs is drawn from it.
_last_declared: tuple[ast.Module, tuple[object, ...], Module, _Declarations | None] | None = None


def _declared(
    tree: ast.Module,
    module: str,
    is_package: bool,
    transforms: Mapping[str, TransformSpec],
    traced_only: bool,
    whole: WholeModule | None = None,
) -> tuple[Module, bool]:
    """A module holding what one walk over `tree` finds (its functions, scopes, imports, the
    calls that may apply a transform), and nothing interpreted yet; and whether it names a
    transform (`_names_a_transform`). What only the interpreters read is drawn from the walk
    when they will run (with `traced_only`, not for a module that names no transform: see
    `analyse`); the functions that may apply a transform, only in a module that names one:
    another makes no entry, and its functions wait for a caller."""
    global _last_declared
    key = (module, is_package, _items(transforms), whole)
    last = _last_declared
    if last is None or last[0] is not tree or last[1] != key:
        walked = Module(module, tree, {})
        walker = _Declarations(walked, is_package)
        walker.walk(tree)
        last = _last_declared = (tree, key, walked, walker)
    walked, declarations = last[2], last[3]
    transforming = _names_a_transform(walked, frozenset(transforms))
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
        _values={},
        _values_of=0,
    )
    return copy, transforming


def _cycles(module: Module) -> dict[str, int]:
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


def function_id(node: ast.AST, qualname: str) -> str:
    return f"{qualname}@{getattr(node, 'lineno', 0)}"


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
        for expr in [call.func, *call.args, *(k.value for k in call.keywords)]:
            if isinstance(expr, ast.Starred):
                expr = expr.value
            if isinstance(expr, ast.Attribute) and expr.attr in CUSTOM_RULE_METHODS:
                return True
            parts = dotted(expr)
            if parts is None and not isinstance(expr, ast.Lambda):
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
            return imported in _FUNCTION_MAKERS
        return parts[0] in self.module.scope("<module>").assigned or parts[0] not in _BUILTINS


def _methods(owner: type, prefix: str) -> dict[type, Callable[..., Any]]:
    """`owner`'s method for each kind of node that has one (`visit_Call`, `s_If`, `e_Call`),
    by the node's class: looked up once, not by name at each node. Functions, not bound
    methods: held by an instance, they would make it a reference cycle, and its whole syntax
    tree garbage for the cycle collector."""
    return {
        kind: getattr(owner, prefix + name)
        for name, kind in vars(ast).items()
        if isinstance(kind, type) and hasattr(owner, prefix + name)
    }


_HANDLERS = _methods(_Declarations, "visit_")


def _static_fields(module: Module) -> set[str]:
    """Attribute names the module's pytree classes declare as metadata: never traced."""
    found: set[str] = set()
    for cls in module.classes.values():
        for statement in cls.body:
            if (
                isinstance(statement, ast.AnnAssign)
                and isinstance(statement.target, ast.Name)
                and statement.value is not None
                and _static_field(statement.value, module)
            ):
                found.add(statement.target.id)
            if isinstance(statement, ast.FunctionDef) and statement.name == "tree_flatten":
                found |= _aux_attributes(statement)
    if not _may_name(module, "register_dataclass"):
        return found
    for node in (call for scope in module.scopes.values() for call in scope.calls):
        if _qualified(node.func, module).endswith("register_dataclass"):
            for keyword in node.keywords:
                if keyword.arg == "meta_fields":
                    found |= {
                        e.value
                        for e in _literal_elements(keyword.value)
                        if isinstance(e.value, str)
                    }
    return found


def _may_name(module: Module, name: str) -> bool:
    """Whether the module's code may name `name`: it reads it, imports it (under any name) or
    reads an attribute of that name."""
    return (
        name in module.names_read
        or any(target.rsplit(".", 1)[-1] == name for target in module.imports.values())
        or any(name in scope.attributes for scope in module.scopes.values())
    )


def _passed_instances(module: Module) -> dict[str, dict[str, str]]:
    """Parameters that every call of their function in the module gives an instance of the
    same class of the module: `C(...)`, a name bound only to it, or such a parameter handed on.
    A call through a transform (`eqx.filter_grad(loss)(model, x)`) counts as a call."""
    if not module.classes.keys() - module.imports.keys():
        return {}  # the module makes no instance of its own classes
    names = {
        node.name: fid for fid, node in module.nodes.items() if not isinstance(node, ast.Lambda)
    }
    calls: list[tuple[str, ast.Call, str, list[str]]] = []  # caller, call, callee, positional
    for fid, scope in module.scopes.items():
        for call in scope.calls:
            func = (
                call.func.args[0]
                if isinstance(call.func, ast.Call) and call.func.args
                else call.func
            )
            callee = names.get(func.id) if isinstance(func, ast.Name) and call.args else None
            if callee is not None:
                calls.append((fid, call, callee, params_of(module.nodes[callee])[1]))
    if not calls:
        return {}
    bound: dict[tuple[str, str], set[str | None]] = {}  # (function id, name) -> classes
    for fid, scope in module.scopes.items():
        for assign in scope.assigns:
            made = _class_made(assign.value, module)
            for target in assign.targets:
                for name in names_bound(target):
                    bound.setdefault((fid, name), set()).add(made)
    found: dict[str, dict[str, str]] = {}
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
                elif (made := _class_made(arg, module)) is not None:  # `step(MLP(...), x)`
                    given.setdefault(key, set()).add(made)
        new: dict[str, dict[str, str]] = {}
        for (fid, param), classes in given.items():
            if len(classes) == 1 and None not in classes:
                new.setdefault(fid, {})[param] = next(iter(c for c in classes if c))
        if new == found:
            break
        found = new
    return found


def whole_module(module: Module) -> WholeModule:
    """What the analysis of a part of `module` must be told of the whole (`jaxfix.models.parts`)."""
    static_fields = module.static_fields if module.whole_read else _static_fields(module)
    instance_params = module.instance_params if module.whole_read else _passed_instances(module)
    return WholeModule(
        tuple(sorted(static_fields)),
        tuple((fid, tuple(sorted(ps.items()))) for fid, ps in sorted(instance_params.items())),
    )


def _class_made(value: ast.expr, module: Module) -> str | None:
    """`C` for `C(...)` where C is a class of the module."""
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Name):
        name = value.func.id
        if name in module.classes and name not in module.imports:
            return name
    return None


def _static_field(value: ast.expr, module: Module) -> bool:
    """`field(pytree_node=False)`, `eqx.field(static=True)`, `static_field()`,
    `dataclasses.field(metadata=dict(static=True))` / `metadata={"static": True}`."""
    if not isinstance(value, ast.Call):
        return False
    name = _qualified(value.func, module).rsplit(".", 1)[-1]
    if name == "static_field":
        return True
    if name not in _STATIC_FIELD_MAKERS:
        return False
    for keyword in value.keywords:
        if keyword.arg == "pytree_node" and _is_constant(keyword.value, False):
            return True
        if keyword.arg == "static" and _is_constant(keyword.value, True):
            return True
        if keyword.arg == "metadata" and _static_metadata(keyword.value):
            return True
    return False


def _static_metadata(value: ast.expr) -> bool:
    if isinstance(value, ast.Dict):
        return any(
            isinstance(k, ast.Constant) and k.value == "static" and _is_constant(v, True)
            for k, v in zip(value.keys, value.values, strict=True)
        )
    if isinstance(value, ast.Call):
        return any(k.arg == "static" and _is_constant(k.value, True) for k in value.keywords)
    return False


def _aux_attributes(flatten: ast.FunctionDef) -> set[str]:
    """`self.a` read in the aux data a `tree_flatten` returns (`return children, (self.a,)`)."""
    found: set[str] = set()
    for node in ast.walk(flatten):
        if not (isinstance(node, ast.Return) and isinstance(node.value, ast.Tuple)):
            continue
        if len(node.value.elts) == 2:
            for sub in ast.walk(node.value.elts[1]):
                if isinstance(sub, ast.Attribute) and isinstance(sub.value, ast.Name):
                    found.add(sub.attr)
    return found


def _is_constant(node: ast.expr, value: object) -> bool:
    return isinstance(node, ast.Constant) and node.value is value


def _literal_elements(node: ast.expr) -> list[ast.Constant]:
    """The literals of a literal tuple, list or set (or the one literal); `-1` included."""
    elements = node.elts if isinstance(node, ast.Tuple | ast.List | ast.Set) else [node]
    found = []
    for element in elements:
        if isinstance(element, ast.Constant):
            found.append(element)
        elif (
            isinstance(element, ast.UnaryOp)
            and isinstance(element.op, ast.USub)
            and isinstance(element.operand, ast.Constant)
            and isinstance(element.operand.value, int)
        ):
            found.append(ast.Constant(-element.operand.value))
    return found


# Decorators that make a class's annotated names its fields, filled by its constructor.
_RECORD_DECORATORS = ("dataclass",)
_RECORD_BASES = frozenset({"typing.NamedTuple", "NamedTuple"})


def _is_record_class(cls: ast.ClassDef, module: Module) -> bool:
    """A dataclass (`@dataclass`, `@dataclasses.dataclass(frozen=True)`, `@flax.struct.dataclass`,
    `@chex.dataclass`) or a `typing.NamedTuple`: its constructor stores what it is given."""
    for decorator in cls.decorator_list:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        if _qualified(target, module).rsplit(".", 1)[-1] in _RECORD_DECORATORS:
            return True
    return any(_qualified(base, module) in _RECORD_BASES for base in cls.bases)


def _qualified(node: ast.expr, module: Module) -> str:
    parts = dotted(node)
    if not parts:
        return ""
    head = module.imports.get(parts[0], parts[0])
    return ".".join([head, *parts[1:]])


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


class _Exit(Exception):
    """Not an error: the branch returned or raised (nothing after it runs)."""


class _Interpreter:
    """Interprets one function body; nested functions get interpreters of their own."""

    def __init__(
        self,
        module: Module,
        transforms: Mapping[str, TransformSpec],
        fid: str,
        node: FunctionNode | ast.Module,
        parent: _Interpreter | None,
        class_name: str | None,
        closure: Env,
    ) -> None:
        self.module = module
        self.transforms = transforms
        self.parent = parent
        self.closure = closure
        params: list[str] = []
        positional: list[str] = []
        body: list[ast.stmt] = []
        if isinstance(node, ast.Module):
            body, name = node.body, "<module>"
        else:
            params, positional = params_of(node)
            body = node.body if not isinstance(node, ast.Lambda) else []
            name = getattr(node, "name", "<lambda>")
        self.summary: Summary = Summary(
            fid, node, name, params, positional, parent.summary.id if parent else None, class_name
        )
        module.functions[fid] = self.summary
        self.body = body
        scope = module.scope(fid)
        self.declared = scope.declared if not isinstance(node, ast.Module) else set()
        self.locals = (scope.assigned | set(params)) - self.declared
        self.guarded = 0
        self.raising = 0  # inside `raise` / `assert` statements (see `Call.raising`)
        self.compile_time = 0
        self.is_module = isinstance(node, ast.Module)

    # -- running ---------------------------------------------------------------------------

    def run(self) -> Env:
        env: Env = {p: parameter_value(Param(self.summary.id, p)) for p in self.summary.params}
        for name, class_name in self._instance_params().items():
            env[name] = Value(
                Kind.TRACED,
                frozenset({Param(self.summary.id, name)}),
                qualified=f"<instance>.{class_name}",
            )
        node = self.summary.node
        running = self.module.running
        running.add(self.summary.id)
        try:
            if isinstance(node, ast.Lambda):
                self.summary.returns = self.expr(node.body, env)
                return env
            with contextlib.suppress(_Exit):
                self.block(self.body, env)
            return env
        finally:
            running.discard(self.summary.id)

    def _instance_params(self) -> dict[str, str]:
        """Parameters that hold an instance of one of the module's classes: `self`, and
        parameters annotated with such a class (`model: MLP`)."""
        node = self.summary.node
        if isinstance(node, ast.Module):
            return {}
        found: dict[str, str] = {}
        if (class_name := self._self_class()) is not None:
            found[self.summary.positional[0]] = class_name
        found.update(self.module.instance_params.get(self.summary.id, {}))
        args = node.args
        for param in [*args.posonlyargs, *args.args, *args.kwonlyargs]:
            annotation = param.annotation
            if (
                isinstance(annotation, ast.Name)
                and annotation.id in self.module.classes
                and annotation.id not in self.module.imports
            ):
                found[param.arg] = annotation.id
        return found

    def block(self, body: list[ast.stmt], env: Env) -> None:
        """Interpret `body` in place on `env`; raises `_Exit` when every path leaves."""
        for statement in body:
            self.statement(statement, env)

    def branch(self, body: list[ast.stmt], env: Env) -> Env | None:
        """`body` run on a copy of `env`: the environment after it, or None if it exits."""
        inner = dict(env)
        try:
            self.block(body, inner)
        except _Exit:
            return None
        return inner

    def statement(self, node: ast.stmt, env: Env) -> None:
        method = _STATEMENTS.get(type(node))
        if method is not None:
            method(self, node, env)
            return
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.expr):
                self.expr(child, env)

    def s_Expr(self, node: ast.Expr, env: Env) -> None:
        self.expr(node.value, env)

    def s_Return(self, node: ast.Return, env: Env) -> None:
        value = self.expr(node.value, env) if node.value is not None else STATIC
        old = self.summary.returns
        self.summary.returns = value if old is None else v.join(old, value)
        raise _Exit

    def s_Raise(self, node: ast.Raise, env: Env) -> None:
        with self._raising():
            for part in (node.exc, node.cause):
                if part is not None:
                    self.expr(part, env)
        raise _Exit

    def s_Assert(self, node: ast.Assert, env: Env) -> None:
        with self._raising():
            self.expr(node.test, env)
            if node.msg is not None:
                self.expr(node.msg, env)

    @contextlib.contextmanager
    def _raising(self) -> Iterator[None]:
        """Calls made meanwhile are in a `raise` or `assert` statement."""
        self.raising += 1
        try:
            yield
        finally:
            self.raising -= 1

    def s_Assign(self, node: ast.Assign, env: Env) -> None:
        value = self.expr(node.value, env)
        guard = self._tracer_guard(node.value, env)
        if guard is not None:
            value = Value(Kind.STATIC, guard=guard)  # a bool; `if value:` narrows as the test
        for target in node.targets:
            self.bind(target, value, env, node)

    def s_AnnAssign(self, node: ast.AnnAssign, env: Env) -> None:
        if node.value is not None:
            self.bind(node.target, self.expr(node.value, env), env, node)

    def s_AugAssign(self, node: ast.AugAssign, env: Env) -> None:
        value = v.combine([self._load_target(node.target, env), self.expr(node.value, env)])
        self.bind(node.target, value, env, node)

    def _load_target(self, target: ast.expr, env: Env) -> Value:
        if isinstance(target, ast.Name):
            return self.name(target.id, env)
        return (
            self.expr(target, env) if isinstance(target, ast.Attribute | ast.Subscript) else UNKNOWN
        )

    def s_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef, env: Env) -> None:
        fid = self.module.by_node[node]
        self._defaults(node, env)
        for decorator in node.decorator_list:
            self.expr(decorator, env)
        self.nested(node, env)
        value = Value(Kind.UNKNOWN, function=fid)
        for decorator in reversed(node.decorator_list):
            value = self.decorate(decorator, value, node, env)
        env[node.name] = value

    s_AsyncFunctionDef = s_FunctionDef

    def _defaults(self, node: FunctionNode, env: Env) -> None:
        """Defaults are evaluated where the function is defined (a lambda there is analysed)."""
        for default in [*node.args.defaults, *node.args.kw_defaults]:
            if default is not None:
                self.expr(default, env)

    def s_ClassDef(self, node: ast.ClassDef, env: Env) -> None:
        bases = {self.expr(base, env).qualified for base in node.bases}
        traced_base = min(TRACED_MODULE_BASES & bases, default=None)
        class_body = dict(env)  # class attributes are no locals of the enclosing function
        for statement in node.body:
            if not isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef):
                with contextlib.suppress(_Exit):
                    self.statement(statement, class_body)
                continue
            if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef):
                self._defaults(statement, env)
                for decorator in statement.decorator_list:
                    self.expr(decorator, env)
                self.nested(statement, env, class_name=node.name)
                value = Value(Kind.UNKNOWN, function=self.module.by_node[statement])
                for decorator in reversed(statement.decorator_list):
                    self.decorate(decorator, value, statement, env)
                if traced_base is not None and not _static_method(statement, "classmethod"):
                    self._module_method(statement, traced_base)
        env[node.name] = Value(Kind.STATIC, qualified=f"<class>.{node.name}")

    def _module_method(self, method: ast.FunctionDef | ast.AsyncFunctionDef, base: str) -> None:
        """A method of a linen / Haiku module runs inside `init` / `apply`, which are meant to
        be jitted: its inputs other than `self` and Python values (`train: bool = False`) are
        traced; not staged (`init` may run un-jitted)."""
        params, positional = params_of(method)
        traced = set(params) - set(positional[:1]) - python_valued_params(method)
        traced -= {p.arg for p in (method.args.vararg, method.args.kwarg) if p is not None}
        fid = self.module.by_node[method]
        self.module.entries.append(
            Entry(
                method,
                self.summary.id,
                base,
                fid,
                frozenset(traced),
                False,
                Reason(Via.MODULE_METHOD, base),
            )
        )

    def nested(self, node: FunctionNode, env: Env, class_name: str | None = None) -> str:
        """Interpret a function defined here: now, with the names it closes over as they are
        at this point; at module level, once the module's names are known."""
        fid = self.module.by_node[node]

        def run() -> None:
            closure = {**self.closure, **env} if not self.is_module else {}
            _Interpreter(self.module, self.transforms, fid, node, self, class_name, closure).run()

        if self.is_module:
            self.module.pending[fid] = run
        else:
            run()
        return fid

    def s_If(self, node: ast.If, env: Env) -> None:
        test = self.expr(node.test, env)
        guard = self._tracer_guard(node.test, env)
        longer = isinstance(node.test, ast.BoolOp)
        asks = (
            (guard is None or longer)
            and self.module.names_tracer_test()
            and any(
                isinstance(n, ast.Call) and _TRACER_TEST.search(".".join(dotted(n.func) or ()))
                for n in ast.walk(node.test)
            )
        )
        if guard is None or (asks and longer):
            # A test that asks about tracers in a way not narrowed here (`not_jax_tracer(a)
            # and not_jax_tracer(b)`): both branches know what they hold.
            self._bool(node.test, test)
            self.guarded += asks
            try:
                self._join_into(env, self.branch(node.body, env), self.branch(node.orelse, env))
            finally:
                self.guarded -= asks
            return
        name = guard.name
        concrete = dict(env)
        concrete[name] = STATIC
        concrete_body = guard.concrete_when
        guards = int(guard.tracer_otherwise)
        self.guarded += guards
        try:
            tracer_side = self.branch(node.orelse if concrete_body else node.body, env)
        finally:
            self.guarded -= guards
        concrete_side = self.branch(node.body if concrete_body else node.orelse, concrete)
        original = env.get(name)
        if (
            tracer_side is not None
            and concrete_side is not None
            and original is not None
            and concrete_side.get(name) == STATIC  # narrowed only: both paths go on with it
        ):
            concrete_side[name] = original
        self._join_into(env, tracer_side, concrete_side)

    def _join_into(self, env: Env, *sides: Env | None) -> None:
        # A side may be `env` itself (a `match` that no case may match): read it before clearing.
        reached = [dict(side) if side is env else side for side in sides if side is not None]
        if not reached:
            raise _Exit
        env.clear()
        first, *rest = reached
        for name, value in first.items():
            for other in rest:
                value = v.join(value, other.get(name, UNKNOWN))
            env[name] = value
        for other in rest:
            for name in other.keys() - first.keys():
                env[name] = UNKNOWN

    def _tracer_guard(self, test: ast.expr, env: Env) -> Guard | None:
        """What `test` tells of whether a name holds a tracer (see `Guard`); None when it
        tells nothing. Also through `and` / `or` and a name bound to such a test, as long as
        the tested name is not rebound (Pyright's aliased conditions)."""
        if isinstance(test, ast.Name):
            guard = env.get(test.id, UNKNOWN).guard
            # The same object: every rebinding of a traced name makes a new value.
            fresh = guard is not None and env.get(guard.name) is guard.subject
            return guard if fresh else None
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            inner = self._tracer_guard(test.operand, env)
            return None if inner is None else inner._replace(concrete_when=not inner.concrete_when)
        if isinstance(test, ast.BoolOp):
            # `a and b` holds only when both do; `a or b` fails only when both do.
            holds = isinstance(test.op, ast.And)
            for operand in test.values:
                inner = self._tracer_guard(operand, env)
                if inner is not None and inner.concrete_when is holds:
                    return inner._replace(tracer_otherwise=False)
            return None
        subject, concrete_when, tracer_otherwise = self._tested(test)
        if subject is None:
            return None
        return Guard(subject, concrete_when, tracer_otherwise, env.get(subject))

    def _tested(self, test: ast.expr) -> tuple[str | None, bool, bool]:
        """The name a single test asks about and what it tells (see `Guard`)."""
        nothing = (None, False, False)
        if (
            isinstance(test, ast.Compare)
            and len(test.ops) == 1
            and isinstance(test.ops[0], ast.In)
            and isinstance(test.left, ast.Call)
            and isinstance(test.left.func, ast.Name)
            and test.left.func.id == "type"
            and len(test.left.args) == 1
            and isinstance(test.left.args[0], ast.Name)
        ):
            return test.left.args[0].id, True, False  # `type(x) in python_scalar_types`
        if not isinstance(test, ast.Call) or not test.args:
            return nothing
        subject = test.args[0]
        parts = dotted(test.func)
        if not isinstance(subject, ast.Name) or parts is None:
            return nothing
        callee = ".".join(parts)
        if callee.endswith("isinstance") and len(test.args) == 2:
            if _TRACER_TEST.search(ast.unparse(test.args[1])):
                return subject.id, False, True
            if _python_types(test.args[1]):
                return subject.id, True, False
            return nothing
        if callee in ("hasattr", "getattr") and _asks_array_attribute(test):
            return subject.id, False, False  # every tracer has a `dtype`
        if _TRACER_TEST.search(callee):
            concrete = "concrete" in callee.lower() or callee.lower().split(".")[-1].startswith(
                "not"
            )
            return subject.id, concrete, True
        return nothing

    def _loop(self, node: ast.For | ast.AsyncFor | ast.While, env: Env) -> None:
        state = dict(env)
        for _ in range(MAX_LOOP_ROUNDS):
            inner = dict(state)
            if isinstance(node, ast.For | ast.AsyncFor):
                self.bind(node.target, self._element(self.expr(node.iter, inner)), inner, node)
            else:
                self._bool(node.test, self.expr(node.test, inner))
            after = self.branch(node.body, inner)
            if after is None:
                break
            merged = dict(state)
            self._join_into(merged, state, after)
            if merged == state:
                break
            state = merged
        env.clear()
        env.update(state)
        end = self.branch(node.orelse, env)
        if end is not None:
            env.update(end)

    s_For = s_AsyncFor = s_While = _loop

    def _element(self, iterable: Value) -> Value:
        if iterable.element is not None:
            return iterable.element
        if iterable.elements:
            value = iterable.elements[0]
            for other in iterable.elements[1:]:
                value = v.join(value, other)
            return value
        if iterable.kind is Kind.TRACED:
            return iterable
        return STATIC if iterable.kind is Kind.STATIC else UNKNOWN

    def s_Try(self, node: ast.Try, env: Env) -> None:
        catches = any(
            h.type is None or _CONCRETIZATION_ERRORS.search(ast.unparse(h.type))
            for h in node.handlers
        )
        self.guarded += catches
        try:
            body = self.branch(node.body, env)
        finally:
            self.guarded -= catches
        after_body = self.branch(node.orelse, body) if body is not None else None
        handlers = []
        for handler in node.handlers:
            start = dict(env)  # the handler may start anywhere in the body
            if body is not None:
                self._join_into(start, env, body)
            if handler.name:
                start[handler.name] = UNKNOWN
            handlers.append(self.branch(handler.body, start))
        self._join_into(env, after_body, *handlers)
        self.block(node.finalbody, env)

    s_TryStar = s_Try

    def s_With(self, node: ast.With | ast.AsyncWith, env: Env) -> None:
        compile_time = 0
        for item in node.items:
            value = self.expr(item.context_expr, env)
            if (
                isinstance(item.context_expr, ast.Call)
                and self._callee_name(item.context_expr.func, env) == COMPILE_TIME_EVAL
            ):
                compile_time = 1
            if item.optional_vars is not None:
                self.bind(
                    item.optional_vars, UNKNOWN if value.kind is Kind.TRACED else value, env, node
                )
        self.compile_time += compile_time
        try:
            self.block(node.body, env)
        finally:
            self.compile_time -= compile_time

    s_AsyncWith = s_With

    def s_Match(self, node: ast.Match, env: Env) -> None:
        self.expr(node.subject, env)
        sides = [self.branch(case.body, env) for case in node.cases]
        self._join_into(env, env if len(node.cases) else None, *sides)

    def s_Import(self, node: ast.Import | ast.ImportFrom, env: Env) -> None:
        for alias in node.names:
            bound = (alias.asname or alias.name).split(".", 1)[0]
            if bound in self.module.imports:
                env[bound] = Value(Kind.STATIC, qualified=self.module.imports[bound])

    s_ImportFrom = s_Import

    def s_Delete(self, node: ast.Delete, env: Env) -> None:
        for target in node.targets:
            if isinstance(target, ast.Name):
                env.pop(target.id, None)

    # -- bindings and stores ---------------------------------------------------------------

    def bind(self, target: ast.expr, value: Value, env: Env, statement: ast.stmt) -> None:
        if isinstance(target, ast.Name):
            env[target.id] = value
            if target.id in self.declared:
                self._store(statement, target.id, value, True)
            return
        if isinstance(target, ast.Tuple | ast.List):
            starred = any(isinstance(e, ast.Starred) for e in target.elts)
            for index, element in enumerate(target.elts):
                if isinstance(element, ast.Starred):
                    self.bind(element.value, UNKNOWN, env, statement)
                elif (
                    value.elements is not None
                    and not starred
                    and len(value.elements) == len(target.elts)
                ):
                    self.bind(element, value.elements[index], env, statement)
                else:
                    self.bind(
                        element,
                        self._element(value) if value.kind is Kind.TRACED else UNKNOWN,
                        env,
                        statement,
                    )
            return
        if isinstance(target, ast.Starred):
            self.bind(target.value, UNKNOWN, env, statement)
            return
        if isinstance(target, ast.Attribute | ast.Subscript):
            if isinstance(target, ast.Subscript):
                self.expr(target.value, env)  # what is written into (a NumPy array?)
                self.expr(target.slice, env)
            root: ast.expr = target
            while isinstance(root, ast.Attribute | ast.Subscript):
                root = root.value
            if isinstance(root, ast.Name):
                outlives = root.id not in self.locals or root.id in outliving_params(self.summary)
                self._store(statement, root.id, value, outlives)

    def _self_class(self) -> str | None:
        """The class whose instance the first parameter holds: None for a function, a static
        or class method, or a method without parameters."""
        if not self.summary.positional or _static_method(self.summary.node, "classmethod"):
            return None
        return self.summary.class_name

    def _store(self, node: ast.stmt, root: str, value: Value, outlives: bool) -> None:
        self.summary.stores.append(
            Store(node, self.summary.id, root, value, outlives, bool(self.guarded))
        )

    # -- expressions -----------------------------------------------------------------------

    def expr(self, node: ast.expr, env: Env) -> Value:
        method = _EXPRESSIONS.get(type(node))
        if method is not None:
            value: Value = method(self, node, env)
        else:
            value = v.combine(
                [self.expr(c, env) for c in ast.iter_child_nodes(node) if isinstance(c, ast.expr)]
            )
        self.summary.values[node] = value
        if self.guarded:
            self.module.guarded.add(node)
        return value

    def name(self, name: str, env: Env) -> Value:
        if name in env:
            return env[name]
        if name in self.locals:
            return UNKNOWN
        if name in self.closure:
            return self.closure[name]
        if name in self.module.imports:
            return Value(Kind.STATIC, qualified=self.module.imports[name])
        if name in self.module.final_env:
            return self.module.final_env[name]
        if name in _BUILTINS:
            return Value(Kind.STATIC, qualified=f"builtins.{name}")
        return UNKNOWN

    def e_Name(self, node: ast.Name, env: Env) -> Value:
        return self.name(node.id, env)

    def e_Constant(self, node: ast.Constant, env: Env) -> Value:
        return STATIC

    # The common operations, as `expr` combines the operands of any other expression.
    def e_BinOp(self, node: ast.BinOp, env: Env) -> Value:
        return v.combine([self.expr(node.left, env), self.expr(node.right, env)])

    def e_UnaryOp(self, node: ast.UnaryOp, env: Env) -> Value:
        return v.combine([self.expr(node.operand, env)])

    def e_JoinedStr(self, node: ast.JoinedStr, env: Env) -> Value:
        for part in node.values:
            if isinstance(part, ast.FormattedValue):
                self.expr(part.value, env)
        return STATIC

    def e_Attribute(self, node: ast.Attribute, env: Env) -> Value:
        base = self.expr(node.value, env)
        if base.qualified is not None and base.qualified.startswith("<instance>."):
            method = self._method(base.qualified.removeprefix("<instance>."), node.attr)
            if method is not None:
                # The receiver's sources ride along: `self` is traced when the instance is.
                return Value(Kind.UNKNOWN, base.sources, function=method, qualified="<bound>")
        elif base.qualified is not None and not base.qualified.startswith("<"):
            return Value(base.kind, qualified=f"{base.qualified}.{node.attr}")
        if node.attr in STATIC_ATTRIBUTES or node.attr in self.module.static_fields:
            return STATIC
        given = base.field(node.attr)
        if given is not None:
            return given
        if base.kind is Kind.TRACED:
            return base
        return HOST if base.kind is Kind.HOST else (STATIC if base.kind is Kind.STATIC else UNKNOWN)

    def _fields(self, class_name: str, call: Call) -> tuple[tuple[str, Value], ...] | None:
        """What a call of the module's dataclass or named tuple `class_name` gives each field
        (its own annotated names, in order, take the positional arguments); None for another
        class, or arguments that cannot be matched to fields (positions, with a base class)."""
        cls = self.module.classes.get(class_name)
        if cls is None or not _is_record_class(cls, self.module):
            return None
        names = [
            statement.target.id
            for statement in cls.body
            if isinstance(statement, ast.AnnAssign)
            and isinstance(statement.target, ast.Name)
            and "ClassVar" not in ast.unparse(statement.annotation)
        ]
        inherits = any(_qualified(base, self.module) not in _RECORD_BASES for base in cls.bases)
        if len(call.args) > len(names) or "**" in call.keywords or (call.args and inherits):
            return None  # a base class's fields come first: positions cannot be matched
        given = dict(zip(names, call.args, strict=False))
        given.update((key, value) for key, value in call.keywords.items() if key in names)
        return tuple(given.items())

    def _method(self, class_name: str, attr: str) -> str | None:
        cls = self.module.classes.get(class_name)
        if cls is None:
            return None
        for statement in cls.body:
            if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef) and (
                statement.name == attr
            ):
                return self.module.by_node.get(statement)
        return None

    def e_Subscript(self, node: ast.Subscript, env: Env) -> Value:
        base = self.expr(node.value, env)
        key = self.expr(node.slice, env)
        if base.elements is not None and isinstance(node.slice, ast.Constant):
            index = node.slice.value
            if isinstance(index, int) and -len(base.elements) <= index < len(base.elements):
                return base.elements[index]
        if base.kind is Kind.TRACED or base.elements:
            return v.combine([base, key]) if key.kind is not Kind.UNKNOWN else base
        if base.kind is Kind.HOST:
            return HOST if key.kind is Kind.STATIC else UNKNOWN
        if base.kind is Kind.STATIC and key.kind is Kind.STATIC:
            return STATIC
        return UNKNOWN

    def e_Tuple(self, node: ast.Tuple | ast.List, env: Env) -> Value:
        if any(isinstance(e, ast.Starred) for e in node.elts):
            return v.combine([self.expr(e, env) for e in node.elts])
        elements = tuple(self.expr(e, env) for e in node.elts)
        kind = (
            Kind.STATIC
            if all(e.kind is Kind.STATIC and not e.elements for e in elements)
            else Kind.UNKNOWN
        )
        return Value(kind, elements=elements)

    e_List = e_Tuple

    def e_Starred(self, node: ast.Starred, env: Env) -> Value:
        return self.expr(node.value, env)

    def e_BoolOp(self, node: ast.BoolOp, env: Env) -> Value:
        values = [self.expr(e, env) for e in node.values]
        for operand, value in zip(node.values[:-1], values[:-1], strict=True):
            self._bool(operand, value)
        return v.combine(values) if all(x.kind is Kind.STATIC for x in values) else UNKNOWN

    def e_IfExp(self, node: ast.IfExp, env: Env) -> Value:
        self._bool(node.test, self.expr(node.test, env))
        guard = self._tracer_guard(node.test, env)
        if guard is None:
            return v.join(self.expr(node.body, env), self.expr(node.orelse, env))
        concrete = {**env, guard.name: STATIC}
        body, orelse = (concrete, env) if guard.concrete_when else (env, concrete)
        return v.join(self.expr(node.body, body), self.expr(node.orelse, orelse))

    def e_Compare(self, node: ast.Compare, env: Env) -> Value:
        values = [self.expr(node.left, env), *(self.expr(c, env) for c in node.comparators)]
        if any(isinstance(op, ast.Is | ast.IsNot | ast.In | ast.NotIn) for op in node.ops):
            return STATIC if all(x.kind is not Kind.TRACED for x in values) else UNKNOWN
        return v.combine(values)

    def e_Lambda(self, node: ast.Lambda, env: Env) -> Value:
        self._defaults(node, env)
        return Value(Kind.UNKNOWN, function=self.nested(node, env))

    def e_NamedExpr(self, node: ast.NamedExpr, env: Env) -> Value:
        value = self.expr(node.value, env)
        env[node.target.id] = value
        return value

    def _comprehension(
        self, node: ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp, env: Env
    ) -> Value:
        inner = dict(env)
        for generator in node.generators:
            self.bind(
                generator.target, self._element(self.expr(generator.iter, inner)), inner, ast.Pass()
            )
            for test in generator.ifs:
                self._bool(test, self.expr(test, inner))
        if isinstance(node, ast.DictComp):  # keys in the order of the iteration
            self.expr(node.key, inner)
            return v.combine([self.expr(node.value, inner)])._replace(reorders=True)
        return v.combine([self.expr(node.elt, inner)])

    e_ListComp = e_GeneratorExp = e_DictComp = _comprehension

    def e_Set(self, node: ast.Set | ast.SetComp, env: Env) -> Value:
        """A set holds hashable values: never tracers (adding one raises, which JF106 sees)."""
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.expr):
                self.expr(child, env)
        if isinstance(node, ast.SetComp):
            self._comprehension(node, env)
        return STATIC

    e_SetComp = e_Set

    def e_Dict(self, node: ast.Dict, env: Env) -> Value:
        """A dict of tracers holds tracers in its values; its keys are hashable. Unless they
        are strings written in sorted order, a flatten may put them in another (see
        `Value.reorders`)."""
        for key in node.keys:
            if key is not None:
                self.expr(key, env)
        value = v.combine([self.expr(x, env) for x in node.values])
        keys = [k.value if isinstance(k, ast.Constant) else None for k in node.keys]
        return value if _sorted_strings(keys) else value._replace(reorders=True)

    # -- calls -----------------------------------------------------------------------------

    def _callee_name(self, func: ast.expr, env: Env) -> str | None:
        return self.expr(func, env).qualified

    def e_Call(self, node: ast.Call, env: Env) -> Value:
        func = self.expr(node.func, env)
        receiver: Value | None = None
        method: str | None = None
        if isinstance(node.func, ast.Attribute):
            receiver = self.summary.values.get(node.func.value, UNKNOWN)
            if func.qualified is None and func.function is None:
                method = node.func.attr
        target, bound = func.function, func.bound_positions + (func.qualified == "<bound>")
        instance_of = _instance_class(func)
        if func.function is None and instance_of is not None:
            # Calling an instance runs its class's `__call__`, with the instance as `self`.
            target = self._method(instance_of, "__call__")
            receiver, bound = func, 1
        args = tuple(self.expr(a, env) for a in node.args)
        keywords = {k.arg or "**": self.expr(k.value, env) for k in node.keywords}
        callee = func.qualified if func.qualified and not func.qualified.startswith("<") else None
        # Only a function given by position is mapped over the data (`tree_map(fn, x)`,
        # `map(fn, xs)`); one given by keyword is a setting kept for later (a thread's
        # `target=`, a primitive's `callable=`).
        applied = (
            ()
            if target or callee in self.transforms or callee in _NOT_APPLYING
            else tuple(value for value in args if value.function is not None)
        )
        call = Call(
            node,
            self.summary.id,
            callee,
            target,
            method,
            receiver,
            args,
            keywords,
            bool(self.guarded),
            bound,
            applied,
            bool(self.raising),
        )
        self.summary.calls.append(call)
        return self._result(call, func, env)

    def _result(self, call: Call, func: Value, env: Env) -> Value:
        callee = call.callee
        operands = [*call.values(), *([call.receiver] if call.receiver else [])]
        if func.qualified is not None and func.qualified.startswith("<class>."):
            instance = func.qualified.replace("<class>", "<instance>")
            fields = self._fields(instance.removeprefix("<instance>."), call)
            return Value(Kind.UNKNOWN, qualified=instance, fields=fields)
        if callee is not None:
            if callee in STATIC_QUERIES or callee in _PYTHON_VALUED:
                return STATIC
            if callee.rsplit(".", 1)[-1] in _STATIC_BY_NAME:
                return STATIC
            if callee in self.transforms:
                return self._transform(call)
            if callee == PARTIAL and call.args and call.args[0].function:
                inner = call.args[0]
                return Value(
                    Kind.UNKNOWN,
                    function=inner.function,
                    qualified=inner.qualified,
                    bound_positions=inner.bound_positions + len(call.args) - 1,
                    bound_keywords=inner.bound_keywords | frozenset(call.keywords),
                )
            if callee in CALL_WRAPPERS and call.args and call.args[0].function:
                return call.args[0]  # `jax.named_call(f)` calls f with its own arguments
            if callee.startswith(STAGED_ARRAY_NAMESPACES) or callee.startswith("jax.nn."):
                if self.compile_time:
                    return v.combine(operands)
                sources = v.sources_of(operands) | {Staged(self.summary.id)}
                return v.traced(sources)
            if callee.startswith(("numpy.", "scipy.", "math.")):
                if any(_holds_traced(o) for o in operands):
                    # It raises; once it is rewritten to its `jax.numpy` namesake it gives a
                    # tracer, and what follows must hold with that too.
                    return _unresolved(operands)
                return HOST if callee.startswith(("numpy.", "scipy.")) else STATIC
            if callee in _ITERATORS:
                return self._iterator(callee, call)
            if callee in ("jax.device_get", "jax.device_put"):
                return v.combine(operands)  # under a trace they hand the tracer back
            if callee == "builtins.dict" and (
                call.args or "**" in call.keywords or not _sorted_strings(call.keywords)
            ):
                return UNKNOWN._replace(reorders=True)  # its keys in the order given
            if callee.startswith("builtins."):
                return v.combine(operands) if callee in _ARRAY_BUILTINS else UNKNOWN
            return _unresolved(operands)
        if func.function is not None:
            if func.function in self.module.transformed:
                # A jitted function called from this code: traced when this code is.
                return v.traced(v.sources_of(operands) | {Staged(self.summary.id)})
            wrapped = self._wrap(func, call)
            if wrapped is not None:
                return wrapped
            return self._apply(func.function, call)
        if call.method in CUSTOM_RULE_METHODS and self._custom_derivative(call.receiver):
            assert call.receiver is not None and call.receiver.entry is not None
            primal = self.module.entries[call.receiver.entry]
            for index, value in enumerate(call.args):
                # `defvjp(fwd, bwd)`: fwd takes the primal's arguments, bwd (and a jvp rule)
                # the `nondiff_argnums` ones first, as they were passed.
                as_primal = call.method == "defvjp" and index == 0
                self._enter_rule(call.node, value, primal, as_primal)
            return UNKNOWN
        if call.method is not None and call.receiver is not None:
            if call.method in _DICT_VIEWS:
                element = self._element(call.receiver)
                pairs = {"items": Value(Kind.UNKNOWN, elements=(STATIC, element))}
                return Value(Kind.UNKNOWN, element=pairs.get(call.method, element))
            if call.method in STRING_METHODS or call.method == "keys":
                return STATIC
            if call.receiver.kind is Kind.TRACED:
                if call.method in PYTHON_VALUED_METHODS:
                    return STATIC
                return v.combine(operands)
            if call.receiver.kind is Kind.HOST and all(o.kind is not Kind.TRACED for o in operands):
                return HOST
        return _unresolved(operands)

    def _apply(self, target: str, call: Call) -> Value:
        """The callee's return value with its parameters' conditions replaced by what this
        call gives them."""
        if self.is_module and target in self.module.pending:
            return UNKNOWN  # the module's names are not all known yet: nothing to run it with
        own = target == self.summary.id or self._encloses(target)
        if not own:
            if self.module.in_cycle(self.summary.id, target):
                return UNKNOWN  # whichever of the two is asked for first, neither sees the other
            if target in self.module.running:
                self.module.order_dependent = True
        summary = self.module.summary_of(target)
        if summary is None or summary.returns is None:
            return UNKNOWN
        given = bind_arguments(summary, call)
        return substitute(summary.returns, target, given, self.summary.id)

    def _encloses(self, target: str) -> bool:
        """Whether `target` is a function whose body defines this one (at any depth): it is
        being interpreted, as far as it has gone, whoever asked for it."""
        fid = self.module.declared_in.get(self.summary.id)
        while fid is not None and fid != "<module>":
            if fid == target:
                return True
            fid = self.module.declared_in.get(fid)
        return False

    def _transform(self, call: Call) -> Value:
        """`jax.jit(f, ...)` and the like: an entry for `f`; the value is the transformed
        function (calling it gives arrays)."""
        assert call.callee is not None
        spec = self.transforms[call.callee]
        for index, value in enumerate(call.args):
            if index in spec.fun_positions:
                if spec.fun_sequence:
                    targets = value.elements or (value,)
                else:
                    targets = (self._partial_of_import(call.node.args[index]) or value,)
                for target in targets:
                    self._enter(call.node, call.callee, spec, target, call.node)
        for keyword, value in call.keywords.items():
            if keyword in spec.fun_keywords:
                self._enter(call.node, call.callee, spec, value, call.node)
        first = call.args[0] if call.args else None
        if first is not None and first.function is not None:
            entry = len(self.module.entries) - 1 if self.module.entries else None
            return Value(Kind.UNKNOWN, function=first.function, entry=entry)
        return UNKNOWN

    def _iterator(self, callee: str, call: Call) -> Value:
        """`enumerate(x)` gives an int and an element of x; `zip(a, b)` an element of each."""
        if callee == "builtins.range":
            return STATIC
        elements = [self._element(x) for x in call.args]
        if callee == "builtins.enumerate":
            elements = [STATIC, *elements[:1]]
        return Value(Kind.UNKNOWN, element=Value(Kind.UNKNOWN, elements=tuple(elements)))

    def _custom_derivative(self, value: Value | None) -> bool:
        """Whether `value` is a function made by `jax.custom_jvp` / `jax.custom_vjp`."""
        if value is None or value.entry is None:
            return False
        return self.module.entries[value.entry].transform in CUSTOM_DERIVATIVES

    def _enter_rule(self, node: ast.AST, value: Value, primal: Entry, as_primal: bool) -> None:
        """A custom derivative rule (`f.defjvp(rule)`): its parameters are traced, not staged,
        but for the primal's `nondiff_argnums` arguments, which jax passes as they were given:
        at the same positions (a vjp's forward rule) or first (a jvp rule, a vjp's backward)."""
        if value.function is None:
            return
        function = self.module.nodes.get(value.function)
        if function is None:
            return
        params, positional = params_of(function)
        indices = sorted(primal.positional.index(name) for name in primal.static)
        static = (
            {positional[i] for i in indices if i < len(positional)}
            if as_primal
            else set(positional[: len(indices)])
        )
        params = [p for p in params if p not in static]
        self.module.transformed.add(value.function)
        self.module.entries.append(
            Entry(
                node,
                self.summary.id,
                "jax.custom_jvp",
                value.function,
                frozenset(params),
                False,
                Reason(Via.CUSTOM_RULE),
                primal=primal.target,
            )
        )

    def _wrapper_transform(self, value: Value) -> tuple[str, TransformSpec, ast.Call] | None:
        """A function of the module that returns a transform applied to its first parameter
        (`def compiled(fn): return jax.jit(fn, donate_argnums=0)`): a decorator that traces."""
        function = self.module.nodes.get(value.function or "")
        if not isinstance(function, ast.FunctionDef) or not function.args.args:
            return None
        first = function.args.args[0].arg
        for statement in function.body:
            returned = statement.value if isinstance(statement, ast.Return) else None
            if not isinstance(returned, ast.Call) or not returned.args:
                continue
            if not (isinstance(returned.args[0], ast.Name) and returned.args[0].id == first):
                continue
            name = _qualified(returned.func, self.module)
            spec = self.transforms.get(name)
            if spec is not None and spec.fun_positions[:1] == (0,):
                return name, spec, returned
        return None

    def _wrap(self, wrapper: Value, call: Call) -> Value | None:
        """`compiled(step)`, where `compiled` returns a transform applied to its argument: an
        entry for `step`, as `@compiled` on its `def` makes; the value is the transformed
        function. None when `wrapper` is no such function or is not given one."""
        first = call.args[0] if call.args else None
        if first is None or first.function is None:
            return None
        return self._through_wrapper(wrapper, first, call.node, Via.PASSED)

    def _through_wrapper(
        self, wrapper: Value, target: Value, node: ast.AST, via: Via
    ) -> Value | None:
        """`target` given to `wrapper` (decorated with it, or passed to it): an entry with the
        transform the wrapper applies, and the transformed function as the value. None when
        `wrapper` is no function of the module that returns a transform of its argument."""
        found = self._wrapper_transform(wrapper) if wrapper.function else None
        if found is None:
            return None
        name, spec, options = found
        wrapper_name = getattr(self.module.nodes.get(wrapper.function or ""), "name", "")
        label = f"{wrapper_name}`, which applies `{name}"
        self._enter(node, name, spec, target, options, Reason(via, label))
        return target._replace(entry=len(self.module.entries) - 1)

    def decorate(self, decorator: ast.expr, value: Value, node: FunctionNode, env: Env) -> Value:
        """`@T`, `@T(...)`, `@partial(T, ...)` on a function: an entry."""
        options: ast.Call | None = None
        expr = decorator
        head_value = self.summary.values.get(expr) or self.expr(expr, env)
        if (
            isinstance(expr, ast.Attribute)
            and expr.attr in CUSTOM_RULE_METHODS
            and self._custom_derivative(self.summary.values.get(expr.value))
        ):
            held = self.summary.values.get(expr.value)
            assert held is not None and held.entry is not None
            as_primal = expr.attr == "defvjp"  # `@f.defvjp` alone is unusual: fwd's shape
            self._enter_rule(node, value, self.module.entries[held.entry], as_primal)
            return value
        wrapped = self._through_wrapper(head_value, value, node, Via.DECORATED)
        if wrapped is not None:
            return wrapped
        if isinstance(expr, ast.Call):
            head = self.summary.values.get(expr.func) or self.expr(expr.func, env)
            if head.qualified == PARTIAL and expr.args:
                options, expr = expr, expr.args[0]
            elif head.qualified in self.transforms and not expr.args:
                options, expr = expr, expr.func
            else:
                return value  # another decorator: calls go through to the function
        transform = (self.summary.values.get(expr) or self.expr(expr, env)).qualified
        if transform is not None and transform in self.transforms and value.function is not None:
            name = transform
            reason = Reason(Via.DECORATED, name)
            self._enter(node, name, self.transforms[name], value, options, reason)
            return value._replace(entry=len(self.module.entries) - 1)
        return value

    def _enter(
        self,
        node: ast.AST,
        transform: str,
        spec: TransformSpec,
        target: Value,
        options: ast.Call | None,
        reason: Reason | None = None,
    ) -> None:
        instance_of = _instance_class(target)
        if target.function is None and instance_of is not None:
            method = self._method(instance_of, "__call__")
            target = Value(Kind.UNKNOWN, target.sources, function=method, qualified="<bound>")
        function = self.module.nodes.get(target.function or "")
        if function is None or target.function is None:
            self._enter_imported(transform, spec, target, options)
            return
        params, all_positional = params_of(function)
        # Static positions count `self` for a decorated method, not for a bound one.
        bound = spec.leading_untraced + (target.qualified == "<bound>") + target.bound_positions
        positional = all_positional[bound:]
        static = _static_params(spec, options, positional) | target.bound_keywords
        if target.function in self.module.owners and not _static_method(function):
            static.add(all_positional[0]) if all_positional else None
        if spec.filtered:
            static |= python_valued_params(function)
        argnums = _argnums(spec, options)
        if argnums is not None:
            traced = {positional[i] for i in argnums if -len(positional) <= i < len(positional)}
        else:
            traced = set(params) - set(all_positional[:bound])
            traced -= _unbatched(spec, options, positional)
        self.module.transformed.add(target.function)
        self.module.entries.append(
            Entry(
                node,
                self.summary.id,
                transform,
                target.function,
                frozenset(traced - static),
                spec.staged,
                reason or Reason(Via.PASSED, transform),
                frozenset(static),
                tuple(positional),
                target.sources if target.qualified == "<bound>" else frozenset(),
            )
        )

    def _partial_of_import(self, node: ast.expr) -> Value | None:
        """`functools.partial(loss, cfg, scale=2)` of a name imported from another module: that
        name, with the arguments bound (None for anything else; a `partial` of the module's
        own function keeps it in its value)."""
        if not isinstance(node, ast.Call) or not node.args:
            return None
        inner = self.summary.values.get(node.args[0])
        maker = self.summary.values.get(node.func)
        if maker is None or maker.qualified != PARTIAL or inner is None or inner.function:
            return None
        if any(isinstance(a, ast.Starred) for a in node.args) or any(
            k.arg is None for k in node.keywords
        ):
            return None  # `*args` / `**kwargs`: which parameters they fill is unknown
        return inner._replace(
            bound_positions=len(node.args) - 1,
            bound_keywords=frozenset(k.arg for k in node.keywords if k.arg is not None),
        )

    def _enter_imported(
        self, transform: str, spec: TransformSpec, target: Value, options: ast.Call | None
    ) -> None:
        """`_enter` for a function imported by name (`loss`, `losses.loss`, `partial(loss,
        cfg)`): noted for the run, which alone knows whether the name is a function of another
        of its modules. Arguments bound first are concrete: the transform's positions count
        from after them. Not for `custom_jvp` / `custom_vjp` (they trace nothing themselves),
        transforms that only find shapes (the other module could not tell that the function
        never runs), nor those whose tracing depends on the function's parameters' annotations
        or defaults (Equinox's filters)."""
        name = target.qualified
        if (
            name is None
            or "." not in name
            or target.function is not None
            or transform in CUSTOM_DERIVATIVES | ABSTRACT_TRANSFORMS
            or spec.leading_untraced
            or spec.filtered
        ):
            return
        bound = target.bound_positions
        argnums = _argnums(spec, options)
        positions = None if argnums is None else tuple(bound + i for i in argnums if i >= 0)
        static_positions, static_names = _static_arguments(spec, options)
        static_positions += _unbatched_positions(spec, options)
        self.module.imported_entries.append(
            ImportedEntry(
                name,
                transform,
                self.summary.id,
                positions,
                spec.staged,
                bound,
                (*range(bound), *(i if i < 0 else bound + i for i in static_positions)),
                (*static_names, *sorted(target.bound_keywords)),
            )
        )

    def _bool(self, node: ast.expr, value: Value) -> None:
        """A traced value used as a condition: recorded as a call of `builtins.bool`."""
        if value.kind is Kind.TRACED:
            fake = ast.Call(func=ast.Name("bool"), args=[node], keywords=[])
            ast.copy_location(fake, node)
            self.summary.calls.append(
                Call(
                    fake,
                    self.summary.id,
                    "builtins.bool",
                    None,
                    None,
                    None,
                    (value,),
                    {},
                    bool(self.guarded),
                )
            )


def _sorted_strings(keys: Collection[object]) -> bool:
    """Whether `keys` are strings in sorted order (in which a flatten gives a dict's)."""
    strings = [k for k in keys if isinstance(k, str)]
    return len(strings) == len(keys) and strings == sorted(strings)


def _holds_traced(value: Value) -> bool:
    """A tracer, or a container with one among its elements (at any depth): what a NumPy
    call given it raises on (`np.array([1.0, 2.0])` is a NumPy array)."""
    return value.kind is Kind.TRACED or any(map(_holds_traced, value.parts()))


def _unresolved(operands: list[Value]) -> Value:
    """A callable the analysis cannot see into, given tracers (`optax.apply_updates(p, u)`,
    `hk.Linear(2)(x)`): it returns arrays made from them, as functions of arrays do."""
    found = v.sources_of(operands)
    return (
        v.traced(found)
        if any(o.kind is Kind.TRACED or o.elements or o.fields for o in operands)
        else UNKNOWN
    )


# Attributes every tracer has: a value without one is a Python value.
_ARRAY_ATTRIBUTES = frozenset({"dtype", "shape", "ndim", "aval"})


def _asks_array_attribute(test: ast.Call) -> bool:
    """`hasattr(x, "dtype")`, or `getattr(x, "dtype", None)` (falsy without the attribute)."""
    args = test.args
    if len(args) < 2 or not isinstance(args[1], ast.Constant):
        return False
    if args[1].value not in _ARRAY_ATTRIBUTES:
        return False
    if len(args) == 2:
        return isinstance(test.func, ast.Name) and test.func.id == "hasattr"
    default = args[2]
    return len(args) == 3 and isinstance(default, ast.Constant) and not default.value


_STATEMENTS = _methods(_Interpreter, "s_")
_EXPRESSIONS = _methods(_Interpreter, "e_")


def _python_types(node: ast.expr) -> bool:
    """Whether `node` names only types whose instances are never tracers (`int`, `type`,
    `(float, np.dtype)`)."""
    elements = node.elts if isinstance(node, ast.Tuple) else [node]
    names = [dotted(e) for e in elements]
    return all(parts is not None and parts[-1] in _PYTHON_TYPE_NAMES for parts in names)


def _instance_class(value: Value) -> str | None:
    """The module's class `value` is an instance of, if it is one."""
    prefix, qualified = "<instance>.", value.qualified or ""
    return qualified.removeprefix(prefix) if qualified.startswith(prefix) else None


def parameter_value(param: Param) -> Value:
    """What a parameter holds as its function starts: a tracer when it is given one, the
    object it is given (a dict a flatten may reorder, when it is given one)."""
    return Value(Kind.TRACED, frozenset({param}), reorders=param)


def bind_arguments(summary: Summary, call: Call) -> dict[str, Value]:
    """The callee's parameters and the values `call` gives them."""
    given: dict[str, Value] = {}
    positional = summary.positional[call.bound :]
    if call.bound and call.receiver is not None and summary.positional:
        given[summary.positional[0]] = call.receiver
    for name, value in zip(positional, call.args, strict=False):
        given[name] = value
    for keyword, value in call.keywords.items():
        if keyword in summary.params:
            given[keyword] = value
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
    if summary.positional and summary.class_name and not _static_method(node, "classmethod"):
        found.add(summary.positional[0])
    return found


def _static_method(node: FunctionNode | ast.Module, *also: str) -> bool:
    """Whether `node` is a `@staticmethod` (or one of the decorators `also` names)."""
    names = {"staticmethod", *also}
    return isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and any(
        isinstance(d, ast.Name) and d.id in names for d in node.decorator_list
    )


def _keyword(call: ast.Call | None, name: str | None) -> ast.expr | None:
    if call is None or name is None:
        return None
    return next((k.value for k in call.keywords if k.arg == name), None)


def _int_tuple(node: ast.expr | None) -> tuple[int, ...]:
    return (
        tuple(e.value for e in _literal_elements(node) if isinstance(e.value, int)) if node else ()
    )


def _str_tuple(node: ast.expr | None) -> tuple[str, ...]:
    return (
        tuple(e.value for e in _literal_elements(node) if isinstance(e.value, str)) if node else ()
    )


def _argnums(spec: TransformSpec, options: ast.Call | None) -> tuple[int, ...] | None:
    """The positions a grad-like transform traces (its `argnums`, or their default); None for
    a transform that traces every parameter."""
    if spec.argnums_keyword is None and not spec.default_argnums:
        return None
    return _int_tuple(_keyword(options, spec.argnums_keyword)) or spec.default_argnums


def wrapped_by(transform: str, spec: TransformSpec, options: ast.Call) -> Wrapped:
    """What a wrapper whose body returns `options` (`jax.vmap(fn, in_axes=(0, None))`, a call
    of `transform`) does to every function it wraps."""
    positions, names = _static_arguments(spec, options)
    argnums = _int_tuple(_keyword(options, spec.argnums_keyword)) if spec.argnums_keyword else ()
    return Wrapped(
        transform,
        (*positions, *_unbatched_positions(spec, options)),
        names,
        argnums or None,
    )


def _static_arguments(
    spec: TransformSpec, options: ast.Call | None
) -> tuple[tuple[int, ...], tuple[str, ...]]:
    """The positions and names a transform's call declares static (`static_argnums=1`), with
    those its spec holds for every function (a wrapper's)."""
    positions = [i for k in spec.static_argnums_keywords for i in _int_tuple(_keyword(options, k))]
    names = [n for k in spec.static_argnames_keywords for n in _str_tuple(_keyword(options, k))]
    return (*positions, *spec.static_positions), (*names, *spec.static_names)


def _static_params(
    spec: TransformSpec, options: ast.Call | None, positional: list[str]
) -> set[str]:
    positions, names = _static_arguments(spec, options)
    in_range = [i for i in positions if -len(positional) <= i < len(positional)]
    return {positional[i] for i in in_range} | set(names)


def _unbatched(spec: TransformSpec, options: ast.Call | None, positional: list[str]) -> set[str]:
    return {positional[i] for i in _unbatched_positions(spec, options) if i < len(positional)}


def _unbatched_positions(spec: TransformSpec, options: ast.Call | None) -> tuple[int, ...]:
    """The positions an `in_axes` literal leaves unbatched (`None`): concrete values."""
    axes = _keyword(options, spec.in_axes_keyword)
    if axes is None and spec.in_axes_keyword and options is not None and len(options.args) > 1:
        axes = options.args[1]
    if not isinstance(axes, ast.Tuple | ast.List):
        return ()
    return tuple(
        i for i, e in enumerate(axes.elts) if isinstance(e, ast.Constant) and e.value is None
    )


def python_valued_params(node: FunctionNode | ast.Module) -> set[str]:
    """Parameters that look like Python values, not arrays: annotated with a Python type
    (`n: int`, `act: Callable[...]`, `k: int | None`) or defaulting to a literal (`n=3`), what
    Equinox's filters treat as static."""
    if isinstance(node, ast.Module):
        return set()
    args = node.args
    positional = [*args.posonlyargs, *args.args]
    defaults = defaults_of(args)
    return {
        param.arg
        for param in [*positional, *args.kwonlyargs]
        if (param.annotation is not None and _annotation_names(param.annotation) <= PYTHON_TYPES)
        or _literal(defaults.get(param.arg))
    }


def _literal(node: ast.expr | None) -> bool:
    """A number, string (f-strings too), `True`, `False` or `None`."""
    if isinstance(node, ast.JoinedStr):
        return True
    return isinstance(node, ast.Constant) and node.value is not Ellipsis


def _annotation_names(annotation: ast.expr) -> set[str]:
    """The type names an annotation is made of (`Callable[[int], int] | None` -> Callable,
    None); an unknown shape gives a name no Python type has."""
    if isinstance(annotation, ast.Name):
        return {annotation.id}
    if isinstance(annotation, ast.Attribute):
        return {annotation.attr}
    if isinstance(annotation, ast.Constant) and annotation.value is None:
        return {"None"}
    if isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):
        return _annotation_names(annotation.left) | _annotation_names(annotation.right)
    if isinstance(annotation, ast.Subscript):
        return _annotation_names(annotation.value)
    return {"<unknown>"}
