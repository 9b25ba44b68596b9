"""The traced-context analysis seen from LibCST's tree, for the rules and their fixes.

Which functions run under a trace and which values are tracers is decided once, by
`jaxfix.analysis` on CPython's tree of the same text (flow-sensitive, with function summaries);
this module answers the rules' questions about LibCST nodes by finding the CPython node at the
same place (`jaxfix.analysis.bridge`). What stays here is LibCST's own business: parents,
scopes, qualified names and bindings, which the fixes need.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import libcst as cst
from libcst.metadata import (
    Assignment,
    ClassScope,
    MetadataWrapper,
    PositionProvider,
    QualifiedName,
    QualifiedNameSource,
    Scope,
    ScopeProvider,
)

from jaxfix.analysis import summaries, waits
from jaxfix.analysis.bridge import Span
from jaxfix.analysis.effects import Keys
from jaxfix.analysis.file import FileAnalysis, analyse_file
from jaxfix.analysis.keeping import Outliving
from jaxfix.analysis.project import Entry, ProjectContext
from jaxfix.analysis.reasons import Reason, Via
from jaxfix.analysis.values import Kind, Param, Staged, instance_class
from jaxfix.fixes.module_walk import NOTHING_OWNED, AttributeValues, ModuleWalk, Owned
from jaxfix.fixes.syntax import (
    FunctionNode,
    descendants,
    first_parameter,
    names_read,
    own_names,
    source_of,
)
from jaxfix.models import numpy_scipy
from jaxfix.models.transforms import TRANSFORMS, TransformSpec

Statement = cst.SimpleStatementLine | cst.BaseCompoundStatement
# How many `a = b` aliases a name is followed through (a cycle `a = b; b = a` ends there).
MAX_ALIASES = 8
# What JAX code may call besides `jax.*` and the module's own such functions (see
# `is_jax_code`), the array methods that leave the trace, and how deep calls are followed.
PURE_BUILTINS = frozenset(
    {"builtins.abs", "builtins.all", "builtins.any", "builtins.enumerate", "builtins.isinstance"}
    | {"builtins.len", "builtins.list", "builtins.max", "builtins.min", "builtins.range"}
    | {"builtins.sum", "builtins.tuple", "builtins.zip"}
)
LEAVING_METHODS = frozenset({"item", "tolist", "tobytes", "tofile", "dump", "dumps", "format"})
MAX_CALL_DEPTH = 3
# NumPy functions that JAX code may call on its arrays (see `_numpy_on_array`).
ARRAY_METHOD_NUMPY = frozenset(
    {"all", "amax", "amin", "any", "argmax", "argmin", "argsort", "around", "cumprod"}
    | {"cumsum", "flip", "imag", "max", "mean", "min", "moveaxis", "ndim", "prod", "real"}
    | {"repeat", "reshape", "round", "searchsorted", "shape", "size", "squeeze", "std", "sum"}
    | {"swapaxes", "transpose", "var"}
)


class OutsideSlice(Exception):
    """The analysis of a slice of a file needs a statement the slice left out (host code that
    must wait for a callback, the `def` of a function a rule looks into): the rules must run
    on the whole file."""


@dataclass
class TracedFunction:
    """A function (or lambda) whose body runs under a trace."""

    node: FunctionNode
    traced_params: set[str] = field(default_factory=set)
    staged: bool = False
    reasons: list[Reason] = field(default_factory=list)  # how it came to be traced
    fid: str = ""  # the analysis' id of the function

    @property
    def label(self) -> str:
        return self.node.name.value if isinstance(self.node, cst.FunctionDef) else "<lambda>"


@dataclass(frozen=True)
class HostReads:
    """Where host code must wait for what a hoisted statement writes: before each statement of
    `before`, for the reads at `lines` of the file; or nowhere, `blocked` being the line of a
    read that cannot be made to wait."""

    before: tuple[Statement, ...] = ()
    lines: tuple[int, ...] = ()
    blocked: int | None = None


class TracedAnalysis:
    """The traced functions of one module and the traced values inside them."""

    def __init__(
        self,
        wrapper: MetadataWrapper,
        transforms: Mapping[str, TransformSpec] = TRANSFORMS,
        entries: Sequence[Entry] = (),
        project: ProjectContext = ProjectContext(),  # noqa: B008 - frozen, never mutated
        analysed: FileAnalysis | None = None,
        line_of: Callable[[int], int] | None = None,
    ) -> None:
        """`analysed`: the analysis of the file `wrapper`'s module is (a slice of), whose
        lines map to the file's by `line_of`; analysed here when not given."""
        self.module = wrapper.module
        self.project = project
        # Resolved together first, in as few traversals as LibCST can (the rules need
        # positions too); `resolve` then answers from the wrapper's cache, typed.
        wrapper.resolve_many([ScopeProvider, PositionProvider])
        self._scopes: Mapping[cst.CSTNode, Scope | None] = wrapper.resolve(ScopeProvider)
        self._positions = wrapper.resolve(PositionProvider)
        # Asked of the scopes for the nodes that need them: what `QualifiedNameProvider`
        # answers, without its traversal of every node.
        self._qualified: dict[cst.CSTNode, Collection[QualifiedName]] = {}
        collector = ModuleWalk(self.module)
        self._collected = collector
        self._parents = collector.parents
        self._all_names: set[str] | None = None
        if analysed is None:
            code = self.module.code
            analysed = analyse_file(ast.parse(code), code, transforms, entries)
        self._analysed = analysed
        self._line_of = line_of or _same_line
        self._where = analysed.positions
        self.facts = analysed.facts
        self.functions: dict[FunctionNode, TracedFunction] = self._traced_functions()
        self._statements: dict[tuple[int, int], Statement] | None = None
        self._lines: set[int] | None = None  # the file's lines the module holds
        self._defs: dict[str, list[int]] | None = None  # see `_top_defs`
        self._planned: set[ast.stmt] = set()  # statements fixes put a barrier before
        self._host_writes: set[ast.Subscript] | None = None  # see `writes_host_array`
        self.plan_waits = True  # `Options.plan_waits`: without, no host code waits
        # Fix plans that need every rule's findings in the file first (one function's host
        # statements moved after its calls, `jaxfix.fixes.after_call`): the engine runs them, in
        # order, once the rules' traversal is over.
        self.finishing: list[Callable[[], None]] = []
        # What statements write besides what their code shows (`effect_keys`): the call of
        # another module's helper that a fix moves out of the trace writes what the helper
        # does (None: not known).
        self.extra_effects: dict[cst.CSTNode, Keys | None] = {}
        self.fix_plans: dict[object, Any] = {}  # those plans, by what each is about

    def _traced_functions(self) -> dict[FunctionNode, TracedFunction]:
        """The facts' traced functions, by their LibCST nodes."""
        by_id = {fid: node for fid, node in self._function_ids()}
        found: dict[FunctionNode, TracedFunction] = {}
        for fid, reasons in self.facts.reasons.items():
            node = by_id.get(fid)
            if node is None:
                continue
            params = {
                p.name for p in self.facts.traced if isinstance(p, Param) and p.function == fid
            }
            staged = Staged(fid) in self.facts.traced
            found[node] = TracedFunction(node, params, staged, list(reasons), fid)
        return found

    def _function_ids(self) -> Iterator[tuple[str, FunctionNode]]:
        for function in self._collected.functions:
            node = self._ast_function(function)
            fid = self.facts.module.by_node.get(node) if node is not None else None
            if fid is not None:
                yield fid, function

    def _ast_function(self, function: FunctionNode) -> summaries.FunctionNode | None:
        """The CPython node of a LibCST `def` or lambda."""
        if isinstance(function, cst.FunctionDef):
            start = self._positions[function.name].start
            return self._where.function(self._line_of(start.line), start.column)
        node = self._where.expression(self._span(function))
        return node if isinstance(node, ast.Lambda) else None

    def _span(self, node: cst.CSTNode) -> Span:
        code_range = self._positions[node]
        start, end = code_range.start, code_range.end
        return (self._line_of(start.line), start.column, self._line_of(end.line), end.column)

    def imported_names(self, node: cst.CSTNode, depth: int = 0) -> set[str]:
        """Fully qualified names `node` refers to through an import or a builtin, also through
        a name bound once to another (`my_jit = jax.jit`)."""
        names = self._qualified_names(node)
        if not names or any(q.source is QualifiedNameSource.LOCAL for q in names):
            alias = self._aliased(node) if depth < MAX_ALIASES else None
            if alias is not None:
                return self.imported_names(alias, depth + 1)
            return set()  # unknown, or also bound locally: a look-alike, not the import
        return {
            q.name
            for q in names
            if q.source in (QualifiedNameSource.IMPORT, QualifiedNameSource.BUILTIN)
        }

    def file_import_name(self, node: cst.BaseExpression) -> str | None:
        """The full name of a dotted name (`jnp.linalg.norm`) through the imports at the top
        of the whole file (which a slice may leave out: `imported_names` sees only the slice's);
        None when its first name is no such import."""
        parts: list[str] = []
        while isinstance(node, cst.Attribute):
            parts.append(node.attr.value)
            node = node.value
        if not isinstance(node, cst.Name):
            return None
        head = self.facts.module.imports.get(node.value)
        return ".".join([head, *reversed(parts)]) if head is not None else None

    def is_jax_code(self, function: cst.BaseExpression, depth: int = 0) -> bool:
        """Whether `function` can run in a trace as it is: a `jax` function, or a function of
        the module (or a lambda) that calls only `jax` functions, NumPy functions that run on
        a tracer (`np.sum`: the array's own method), methods of its own values (not
        `.item()`, `.tolist()`...), pure built-ins and other such functions, and stores
        nothing outside itself. Host work (`float(v)`, a file, a database) would fail there."""
        return self.host_work(function, depth) is None

    def host_work(
        self, function: cst.BaseExpression, depth: int = 0, calling: Collection[str] = ()
    ) -> str | None:
        """Why `function` cannot run in a trace as it is (see `is_jax_code`), None when it
        can; the names `calling` (its parameters) hold JAX code, which it may call."""
        if any(name.startswith("jax.") for name in self._file_names(function)):
            return None  # `jnp.tanh`
        node = (
            function
            if isinstance(function, cst.Lambda)
            else self.function_of_name(function)
            if isinstance(function, cst.Name)
            else None
        )
        if node is None:
            return f"`{source_of(function)}` is not a function of this module"
        return self._host_work_in(node, depth=depth, calling=calling)

    def is_jax_function(
        self, node: FunctionNode, skip: Collection[cst.CSTNode] = (), depth: int = 0
    ) -> bool:
        """`is_jax_code` of a `def` or lambda, less the statements `skip`."""
        return self._host_work_in(node, skip, depth) is None

    def _host_work_in(
        self,
        node: FunctionNode,
        skip: Collection[cst.CSTNode] = (),
        depth: int = 0,
        calling: Collection[str] = (),
    ) -> str | None:
        """`host_work` of a `def` or lambda, less the statements `skip`."""
        if depth > MAX_CALL_DEPTH:
            return "it calls functions too deep to follow"
        own = own_names(node) - set(calling)
        host: list[tuple[cst.CSTNode, str]] = []  # what runs on the host, and how to say it
        for child in descendants(node.body, skip):
            if isinstance(child, cst.Global | cst.Nonlocal | cst.Del | cst.Yield | cst.Await):
                host.append((child, "it has a `global`, `nonlocal`, `del`, `yield` or `await`"))
            target = (
                child.target
                if isinstance(child, cst.AssignTarget | cst.AugAssign | cst.AnnAssign)
                else None
            )
            if target is not None and not isinstance(target, cst.Name | cst.Tuple | cst.List):
                # an attribute or an item: maybe of an outer object
                host.append((target, f"it stores into `{source_of(target)}`"))
            if isinstance(child, cst.Call) and not self._jax_call(child, own, depth, calling):
                host.append((child, f"it calls `{source_of(child.func)}`, which is not JAX code"))
        if not host:
            return None
        # The first in the file; of a call and the calls it starts with, the innermost.
        order = {id(found): -index for index, found in enumerate(host)}
        return min(host, key=lambda found: (self.position(found[0]), order[id(found)]))[1]

    def _jax_call(
        self, call: cst.Call, own: set[str], depth: int, calling: Collection[str] = ()
    ) -> bool:
        func = call.func
        if isinstance(func, cst.Name) and func.value in calling:
            return True  # a parameter that holds JAX code
        root = func
        while isinstance(root, cst.Attribute | cst.Subscript | cst.Call):
            root = root.func if isinstance(root, cst.Call) else root.value
        if not isinstance(root, cst.Name) or root.value in own:  # a method of its own values
            return isinstance(func, cst.Attribute) and func.attr.value not in LEAVING_METHODS
        names = self._file_names(func)
        if names:
            return all(
                n.startswith("jax.") or n in PURE_BUILTINS or _numpy_on_array(n) for n in names
            )
        return isinstance(func, cst.Name) and self.is_jax_code(func, depth + 1)

    def _file_names(self, expr: cst.BaseExpression) -> set[str]:
        """What a dotted name refers to through the file's imports (a slice may not hold the
        import a function's body uses)."""
        imported = self.file_import_name(expr)
        return {imported} if imported else self.imported_names(expr)

    def _aliased(self, node: cst.CSTNode) -> cst.BaseExpression | None:
        """For a name bound exactly once, by `name = other.name`, the expression it aliases."""
        if not isinstance(node, cst.Name):
            return None
        assignments = self.assignments(node)
        if len(assignments) != 1:
            return None
        target = self._parents.get(assignments[0].node)
        assign = self._parents.get(target) if isinstance(target, cst.AssignTarget) else None
        if not isinstance(assign, cst.Assign) or len(assign.targets) != 1:
            return None
        value = assign.value
        return value if isinstance(value, cst.Name | cst.Attribute) else None

    def owner_function(self, node: cst.CSTNode) -> FunctionNode | None:
        """The innermost function whose *body* contains `node`."""
        child: cst.CSTNode = node
        parent = self._parents.get(child)
        while parent is not None:
            if isinstance(parent, cst.FunctionDef | cst.Lambda) and child is parent.body:
                return parent
            child, parent = parent, self._parents.get(parent)
        return None

    def simple_statement(
        self, node: cst.CSTNode, through_applied: bool = False
    ) -> cst.SimpleStatementLine | None:
        """The line holding `node` in the body of its function (or of the module); None when
        `node` is in a compound statement's header, or reached through a lambda or a `def`.
        With `through_applied`, also through a lambda traced only because a call applies it to
        traced values (`LOG.append(tree_map(lambda leaf: np.asarray(leaf), params))`): run on
        the host, the line applies it to concrete ones. Not through one a transform traces
        (`jax.vmap(lambda ...)` traces it again wherever the line runs)."""
        current: cst.CSTNode | None = node
        while not isinstance(current, cst.SimpleStatementLine):
            current = self._parents.get(current) if current is not None else None
            if current is None or isinstance(current, cst.FunctionDef):
                return None
            if isinstance(current, cst.Lambda) and not (
                through_applied and self._only_applied(current)
            ):
                return None
        return current

    def _only_applied(self, function: cst.Lambda) -> bool:
        traced = self.functions.get(function)
        return traced is not None and all(r.via is Via.APPLIED for r in traced.reasons)

    def context_of(self, node: cst.CSTNode) -> TracedFunction | None:
        """The traced function `node` runs in, or None when it runs on the host."""
        owner = self.owner_function(node)
        return self.functions.get(owner) if owner is not None else None

    def hashes_traced(self, function: TracedFunction) -> bool:
        """Whether `function` is traced for a reason that makes its values tracers, not only
        guessed ones (`jaxfix.analysis.keys`)."""
        return self._analysed.keys.hashes_traced(function.fid)

    def entered(self, function: TracedFunction) -> bool:
        """Whether a transform traces `function` itself (`jit`, `vmap`, a `scan` body)."""
        return self._analysed.keys.entered(function.fid)

    def is_traced(self, expr: cst.BaseExpression) -> bool:
        """Whether `expr` evaluates to a tracer (or a container of them) where it stands.
        Not in a branch of a tracer check (`if not_jax_tracer(x):`, `if isinstance(x,
        core.Tracer)`, `if core.is_concrete(x)`): such code knows what it holds."""
        context = self.context_of(expr)
        return context is not None and self._traced(expr, context.staged)

    def holds_tracers(self, expr: cst.BaseExpression) -> bool:
        """Whether iterating `expr` (a name or `self.name`), in traced code, certainly gives
        tracers (`jaxfix.analysis.keys.Keys.holds_tracers`)."""
        context = self.context_of(expr)
        node = self._where.expression(self._span(expr)) if context is not None else None
        if context is None or node is None:
            return False
        return self._analysed.keys.holds_tracers(node, context.fid)

    def is_host_array(self, expr: cst.BaseExpression) -> bool:
        """Whether `expr`, in traced code, certainly holds a NumPy array (`TABLE` for a
        module-level `TABLE = np.array([...])`)."""
        if self.context_of(expr) is None:
            return False
        node = self._where.expression(self._span(expr))
        value = self.facts.module.value_of(node) if node is not None else None
        return value is not None and self.facts.kind(value) is Kind.HOST

    def holds_record(self, expr: cst.BaseExpression) -> bool:
        """Whether `expr` is an instance of one of the module's dataclasses or named tuples
        (what a host callback cannot be given: its fields may be no arrays)."""
        node = self._where.expression(self._span(expr))
        value = self.facts.module.value_of(node) if node is not None else None
        return value is not None and value.fields is not None

    def reorders(self, expr: cst.BaseExpression) -> bool:
        """Whether `expr` may hold a dict whose keys a flatten puts in another order (a host
        callback's argument, a jitted function's return): one its function makes, or one a
        caller, in this module or another, may give the parameter it is (`Facts.reorders`)."""
        return self._analysed.reorders(self._where.expression(self._span(expr)))

    def mutates_in_lambda(self, call: cst.Call) -> bool:
        """Whether `call` is a lambda's body that mutates a container the code makes
        (`FileAnalysis.mutates_in_lambda`): its value is the lambda's, as good as dropped."""
        return self._analysed.mutates_in_lambda(self._where.expression(self._span(call)))

    def writes_host_array(self, target: cst.Subscript) -> bool:
        """Whether an assignment to `target`, in traced code, writes a certainly traced value
        into a NumPy array (`FileAnalysis.host_writes`)."""
        if self._host_writes is None:
            self._host_writes = set(self._analysed.host_writes())
        return self._where.expression(self._span(target)) in self._host_writes

    def leaks(self, value: cst.BaseExpression) -> bool:
        """Whether `value` is an array of the trace (or holds one) as its syntax shows (see
        `jaxfix.analysis.keeping`)."""
        found = self._ast_expression(value)
        return found is not None and self._analysed.keeping.leaks(*found)

    def kept_store(self, statement: cst.BaseSmallStatement) -> Outliving | None:
        """Where the assignment `statement` stores a leaking value that outlives the trace
        (see `Keeping.kept_store`)."""
        start = self._positions[statement].start
        node = self._where.statement(self._line_of(start.line), start.column)
        # The stores the first pass selects (with the same guards), decided once for both.
        return self._analysed.kept_stores().get(node) if node is not None else None

    def kept_call(self, call: cst.Call) -> Outliving | None:
        """Where `call` puts a leaking value into a container that outlives the trace (see
        `Keeping.kept_call`)."""
        found = self._ast_expression(call)
        if found is None or not isinstance(found[0], ast.Call):
            return None
        return self._analysed.keeping.kept_call(found[0], found[1])

    def made_by(
        self, expr: cst.BaseExpression, makers: frozenset[str], prefixes: tuple[str, ...] = ()
    ) -> bool:
        """Whether `expr` is made by a call to one of `makers` or of something under
        `prefixes` (see `Keeping.made_by`)."""
        found = self._ast_expression(expr)
        return found is not None and self._analysed.keeping.made_by(*found, makers, prefixes)

    def _ast_expression(self, expr: cst.BaseExpression) -> tuple[ast.expr, str] | None:
        """The CPython expression standing where `expr` stands, and the id of the function
        whose code it is (`<module>` for module-level code)."""
        node = self._where.expression(self._span(expr))
        fid = self._fid(self.owner_function(expr)) if node is not None else None
        return (node, fid) if node is not None and fid is not None else None

    def _fid(self, function: FunctionNode | None) -> str | None:
        """The analysis' id of a function (`<module>` for None: module-level code)."""
        if function is None:
            return "<module>"
        node = self._ast_function(function)
        return self.facts.module.by_node.get(node) if node is not None else None

    def raising(self, call: cst.Call) -> bool:
        """Whether `call`, in traced code, is in a `raise` or `assert` statement (it builds
        an error's message)."""
        known = self._call_in_traced(call)
        return known is not None and known.raising

    def self_made_in_trace(self, name: cst.Name) -> bool:
        """Whether `name` is `self` of a method of a class whose instances traced code makes
        (see `Keeping.self_made_in_trace`)."""
        found = self._ast_expression(name)
        return (
            found is not None
            and isinstance(found[0], ast.Name)
            and (self._analysed.keeping.self_made_in_trace(found[1], found[0].id))
        )

    def holds_instance(self, expr: cst.BaseExpression) -> bool:
        """Whether `expr` holds an instance of one of the module's classes (a module-level
        `checker = Checker()`): an object whose methods are the class's, not a string's."""
        node = self._where.expression(self._span(expr))
        value = self.facts.module.value_of(node) if node is not None else None
        return value is not None and instance_class(value) is not None

    def calls_own_function(self, call: cst.Call) -> bool:
        """Whether `call`, in traced code, calls a function of the module: a method of one
        of its classes through an instance the analysis knows (`run.log(...)` for a
        module-level `run = Run()`). Its body is analysed itself, whatever its name says."""
        known = self._call_in_traced(call)
        return known is not None and known.target is not None

    def _call_in_traced(self, call: cst.Call) -> summaries.Call | None:
        """What the analysis knows of `call`, a call in traced code (None elsewhere)."""
        node = self._where.expression(self._span(call))
        return self._analysed.call_in_traced(node) if isinstance(node, ast.Call) else None

    def is_undone(self, call: cst.Call) -> bool:
        """Whether every exit of its function undoes `call`'s push (see
        `FileAnalysis.undone_calls`)."""
        return self._where.expression(self._span(call)) in self._analysed.undone_calls()

    def traced_names(self, node: cst.CSTNode) -> list[str]:
        """Names read in `node` whose values are traced, in first-appearance order."""
        found: dict[str, None] = {}
        for name in names_read(node):
            if name.value not in found and self._name_traced(name):
                found[name.value] = None
        return list(found)

    def declared_global(self, function: cst.CSTNode | None) -> set[str]:
        """Names `function` declares `global`."""
        return self._owned(function).global_names

    def declared_outer_names(self, function: cst.CSTNode | None) -> set[str]:
        """Names `function` declares `global` or `nonlocal`."""
        owned = self._owned(function)
        return owned.global_names | owned.nonlocal_names

    def _owned(self, function: cst.CSTNode | None) -> Owned:
        """What the body of `function` holds (nothing, for what is not a function)."""
        if isinstance(function, cst.FunctionDef | cst.Lambda):
            return self._collected.owned.get(function, NOTHING_OWNED)
        return NOTHING_OWNED

    def guessed_parameter(self, expr: cst.BaseExpression) -> bool:
        """Whether `expr` is a parameter that is a tracer only by a guess (see
        `FileAnalysis.guessed_parameter`)."""
        found = self._ast_expression(expr)
        return found is not None and self._analysed.guessed_parameter(*found)

    def receivers_of(self, attribute: str) -> set[str]:
        """The names the module reads `attribute` on (`f` for `f.cache_clear()`)."""
        return self._collected.receivers.get(attribute, set())

    def attributes_named(self, attribute: str) -> list[cst.Attribute]:
        """Every `x.attribute` in the module."""
        return self._collected.attributes.get(attribute, [])

    def _qualified_names(self, node: cst.CSTNode) -> Collection[QualifiedName]:
        names = self._qualified.get(node)
        if names is None:
            scope = self._scopes.get(node)
            names = self._qualified[node] = scope.get_qualified_names_for(node) if scope else ()
        return names

    def parent(self, node: cst.CSTNode) -> cst.CSTNode | None:
        """The node `node` is a child of (None for the module)."""
        return self._parents.get(node)

    def at_top_level(self, small: cst.BaseSmallStatement) -> bool:
        """Whether `small` (`LOG = open(p)`) is a statement of the module's top level."""
        line = self.parent(small)
        return isinstance(line, cst.SimpleStatementLine) and isinstance(
            self.parent(line), cst.Module
        )

    def may_run_sharded(self) -> bool:
        """Whether the file's traced functions may run over several devices (see
        `FileAnalysis.may_run_sharded`): host callbacks there cannot be ordered."""
        return self._analysed.may_run_sharded()

    def position(self, node: cst.CSTNode) -> tuple[int, int]:
        """The line of the file and the column where `node` starts: its order in the file."""
        start = self._positions[node].start
        return self._line_of(start.line), start.column

    def line_of(self, node: cst.CSTNode) -> int:
        """The line of the file where `node` starts."""
        return self._line_of(self._positions[node].start.line)

    def inside(self, node: cst.CSTNode, ancestor: cst.CSTNode) -> bool:
        """Whether `node` is `ancestor` or lies within it."""
        current: cst.CSTNode | None = node
        while current is not None:
            if current is ancestor:
                return True
            current = self._parents.get(current)
        return False

    def scope_of(self, node: cst.CSTNode) -> Scope | None:
        return self._scopes.get(node)

    def only_read(self, name: str, methods: Collection[str], builtins: Collection[str]) -> bool:
        """Whether the module-level `name` is a constant of the file: bound once at its top
        level and only read (see `FileAnalysis.only_read`; the whole file, not the slice)."""
        return self._analysed.only_read(name, methods, builtins)

    def all_names(self) -> set[str]:
        """Every identifier the module mentions (to pick names that clash with none)."""
        if self._all_names is None:
            # The file's, not only the slice's: LibCST may see a part of the file.
            self._all_names = self._analysed.identifiers()
            self._all_names.update(n.value for n in self._scopes if isinstance(n, cst.Name))
            for scope in set(self._scopes.values()):
                if scope is not None:
                    self._all_names.update(a.name for a in scope.assignments)
        return self._all_names

    def function_of_name(self, name: cst.Name) -> FunctionNode | None:
        """The `def` or lambda a name is bound to, when it is bound to exactly one. Raises
        `OutsideSlice` when the module is a slice that left out the file's top-level `def`
        of the name."""
        assignments = self.assignments(name)
        if not assignments and not all(map(self._holds_line, self._top_defs().get(name.value, []))):
            raise OutsideSlice
        if len(assignments) != 1:
            return None
        bound = assignments[0].node
        if isinstance(bound, cst.FunctionDef):
            return bound
        parent = self._parents.get(bound)
        if isinstance(parent, cst.AssignTarget):
            assign = self._parents.get(parent)
            if isinstance(assign, cst.Assign) and isinstance(assign.value, cst.Lambda):
                return assign.value
        return None

    def is_assigned_from(self, name: cst.Name, qualified: frozenset[str]) -> bool:
        """Whether `name` is bound (only) by `name = <call to one of qualified>(...)` or
        `with <such a call> as name:`."""
        assignments = self.assignments(name)
        if not assignments:
            return False
        for assignment in assignments:
            target = self._parents.get(assignment.node)
            binder = self._parents.get(target) if target is not None else None
            if isinstance(binder, cst.Assign):
                value = binder.value
            elif isinstance(binder, cst.WithItem):
                value = binder.item
            else:
                return False
            if not (isinstance(value, cst.Call) and self.imported_names(value.func) & qualified):
                return False
        return True

    def static_parameters(self, func: cst.BaseExpression) -> tuple[list[str], set[str]] | None:
        """For a callee that names a same-module function jitted with static arguments
        (`@partial(jax.jit, static_argnums=1)` on its def, or `g = jax.jit(f, static_argnames=
        "n")`): its positional parameter names and its static ones."""
        node = self._where.expression(self._span(func)) if isinstance(func, cst.Name) else None
        value = self.facts.module.value_of(node) if node is not None else None
        if value is None:
            return None
        entry = self.facts.module.entries[value.entry] if value.entry is not None else None
        if entry is None or not entry.static:
            return None
        return list(entry.positional), set(entry.static)

    # ----- the run's other modules -----------------------------------------------------------

    def references_to(self, names: Collection[str]) -> list[cst.Name | cst.Attribute]:
        """Every place that reads one of `names` (full names through imports: `pkg.enc.f`
        is read as `enc.f` after `from pkg import enc`)."""
        wanted = set(names)
        found: list[cst.Name | cst.Attribute] = []
        for scope in {s for s in self._scopes.values() if s is not None}:
            for access in scope.accesses:
                node: cst.CSTNode | None = access.node
                while isinstance(node, cst.Name | cst.Attribute):
                    if self.imported_names(node) & wanted:
                        found.append(node)
                        break
                    parent = self._parents.get(node)
                    climbs = isinstance(parent, cst.Attribute) and parent.value is node
                    node = parent if climbs else None
        return found

    def instance_attribute_values(
        self, attribute: cst.Attribute
    ) -> list[cst.BaseExpression] | None:
        """For `self.name` in a method (`self` its first parameter): the values the methods of
        its class give `self.name` (`self.name = value`). None for another attribute, or when
        a method changes it otherwise (`self.name += ...`, `self.name, x = ...`)."""
        method = self.owner_function(attribute)
        if not isinstance(method, cst.FunctionDef) or not isinstance(attribute.value, cst.Name):
            return None
        block = self._parents.get(method)  # the class body holding the method
        owner = self._parents.get(block) if block is not None else None
        if not isinstance(owner, cst.ClassDef) or attribute.value.value != first_parameter(method):
            return None
        found = AttributeValues(attribute.attr.value)
        for statement in owner.body.body:
            if isinstance(statement, cst.FunctionDef) and first_parameter(statement):
                found.receiver = first_parameter(statement)
                statement.body.visit(found)
        return None if found.unknown else found.values

    def used_only_in(self, name: str, statements: Sequence[cst.CSTNode]) -> bool:
        """Whether every use of the module-level `name` in the whole file, but its one binding
        at the top level, lies in `statements` (CPython's tree of the file: a slice may not
        show them all)."""
        lines = self._file_lines(statements)
        bound = 0
        for node in ast.walk(self._analysed.tree):
            if isinstance(node, ast.Global | ast.Nonlocal) and name in node.names:
                return False
            if not isinstance(node, ast.Name) or node.id != name:
                continue
            if not isinstance(node.ctx, ast.Load):
                bound += 1
            elif not any(first <= node.lineno <= last for first, last in lines):
                return False
        top = [s for s in self._analysed.tree.body if isinstance(s, ast.Assign)]
        at_top = any(isinstance(t, ast.Name) and t.id == name for s in top for t in s.targets)
        return bound == 1 and at_top

    def reads_in_view(self, name: str) -> bool:
        """Whether every read of `name` in the whole file (CPython's tree) lies in the module
        analysed: a slice may leave some out (the calls of a function no seed uses)."""
        return all(
            self._holds_line(node.lineno)
            for node in ast.walk(self._analysed.tree)
            if isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Load)
        )

    def top_level_makers(self, name: str) -> set[str]:
        """What made the module-level `name`, bound once at the top level of the whole file:
        the full names of a `def`'s or class's decorators (`ray.remote`, also called:
        `ray.remote(num_cpus=1)`), or of the callee of `name = f(...)`; empty otherwise."""
        module = self.facts.module
        found: list[set[str]] = []
        for statement in self._analysed.tree.body:
            if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                if statement.name == name:
                    decorators = [
                        d.func if isinstance(d, ast.Call) else d for d in statement.decorator_list
                    ]
                    found.append({summaries.qualified_name(d, module) for d in decorators})
            elif isinstance(statement, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == name for t in statement.targets
            ):
                value = statement.value
                callee = value.func if isinstance(value, ast.Call) else None
                found.append({summaries.qualified_name(callee, module)} if callee else set())
        return found[0] - {""} if len(found) == 1 else set()

    def calls_only(self, name: str) -> int | None:
        """How many times the whole file reads `name`, when each read is called and a single
        `def` binds it (CPython's tree of the file: a slice may not show them all); None when
        a read hands it on (`[f]`, `g(f)`) or another statement binds it."""
        calls = reads = binds = 0
        for node in ast.walk(self._analysed.tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                calls += node.func.id == name
            elif isinstance(node, ast.Name) and node.id == name:
                reads += isinstance(node.ctx, ast.Load)
                binds += not isinstance(node.ctx, ast.Load)
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                binds += node.name == name
            elif isinstance(node, ast.Global | ast.Nonlocal):
                binds += name in node.names
            elif isinstance(node, ast.arg):
                binds += node.arg == name
            elif isinstance(node, ast.alias):
                binds += (node.asname or node.name.split(".")[0]) == name
        return calls if calls == reads and binds == 1 else None

    def attribute_used_only_in(self, attribute: str, statements: Sequence[cst.CSTNode]) -> bool:
        """Whether every `x.attribute` of the whole file (on any `x`) lies in `statements`, and
        no string names it (`getattr(x, "attribute")`)."""
        lines = self._file_lines(statements)
        for node in ast.walk(self._analysed.tree):
            if isinstance(node, ast.Constant) and node.value == attribute:
                return False
            if not isinstance(node, ast.Attribute) or node.attr != attribute:
                continue
            if not any(first <= node.lineno <= last for first, last in lines):
                return False
        return True

    def used_eagerly(self, function: cst.FunctionDef) -> bool:
        """Whether code of the whole file outside traced functions reads `function` by its
        name: `name` for a function, `x.name` on any `x` for a method (an instance's callers are
        not what a slice keeps). A read that hands it to a `jax` callable (`jax.jit(f)`) is
        not one."""
        name = function.name.value
        method = isinstance(self._scopes.get(function), ClassScope)
        traced = {
            node for node, fid in self.facts.module.by_node.items() if fid in self.facts.reasons
        }
        todo: list[tuple[ast.AST, bool]] = [(self._analysed.tree, False)]
        while todo:
            node, inside = todo.pop()
            if isinstance(node, summaries.FunctionNode):
                inside = node in traced
            read = node.attr if method and isinstance(node, ast.Attribute) else None
            read = node.id if not method and isinstance(node, ast.Name) else read
            if read == name and not inside and isinstance(getattr(node, "ctx", None), ast.Load):
                return True
            for child in ast.iter_child_nodes(node):
                if not (isinstance(child, ast.expr) and _handed_to_jax(node, child)):
                    todo.append((child, inside))
        return False

    def _file_lines(self, statements: Sequence[cst.CSTNode]) -> list[tuple[int, int]]:
        """The file's first and last line of each of `statements`."""
        spans = [self._positions[s] for s in statements]
        return [(self._line_of(p.start.line), self._line_of(p.end.line)) for p in spans]

    def class_named(self, expr: cst.BaseExpression | None) -> cst.ClassDef | None:
        """The class of the module a name is bound to, when it is bound only to it."""
        if not isinstance(expr, cst.Name):
            return None
        assignments = self.assignments(expr)
        if len(assignments) == 1 and isinstance(assignments[0].node, cst.ClassDef):
            return assignments[0].node
        return None

    # ----- host effects of hoisted statements ------------------------------------------------

    def effect_keys(self, statements: Sequence[Statement]) -> Keys | None:
        """What `statements` (of one traced function) write that host code can read (see
        `jaxfix.analysis.effects`); None when the file does not show it."""
        found = self._ast_statements(statements)
        if found is None or found[1] is None:
            return None
        keys = self._analysed.effects().keys_of(found[0], found[1])
        for statement in statements:
            if statement in self.extra_effects and keys is not None:
                extra = self.extra_effects[statement]
                keys = keys | extra if extra is not None else None
        return keys

    def later_users(self, statements: Sequence[Statement], keys: Keys) -> list[Statement] | None:
        """The statements of the same traced function, after `statements`, that mention
        `keys` (they run at trace time: before a callback that `statements` move into)."""
        found = self._ast_statements(statements)
        nodes, function = found if found is not None else ([], None)
        if function is None:
            return None
        users = [
            self._statement_at(u)
            for u in self._analysed.effects().later_users(nodes, keys, function)
        ]
        return None if None in users else [u for u in users if u is not None]

    def host_reads(self, statement: Statement, keys: Keys) -> HostReads | None:
        """Where host code must wait for what `statement` (moved into a host callback)
        writes; None when a place to wait is not a statement of a block."""
        if not self.plan_waits:
            return HostReads()
        found = self._ast_statements([statement])
        if found is None or found[1] is None:
            return None
        barriers = waits.barriers(self._analysed.effects(), found[1], keys, self._planned)
        return self._host_reads(barriers)

    def _host_reads(self, barriers: waits.Barriers) -> HostReads | None:
        if barriers.blocked is not None:
            return HostReads(blocked=barriers.blocked.lineno)
        before = [self._statement_at(node) for node in barriers.before]
        missing = [n.lineno for b, n in zip(before, barriers.before, strict=True) if b is None]
        if not all(map(self._holds_line, missing)):
            raise OutsideSlice
        places = [b for b in before if b is not None and self._in_block(b)]
        if len(places) != len(before):
            return None
        return HostReads(tuple(places), tuple(n.lineno for n in barriers.reads))

    def imported_host_reads(self, name: str, keys: Keys) -> HostReads | None:
        """Where host code of this module must wait for the host callbacks of a function it
        imports as `name` (they write `keys`); None when a place to wait is not a statement
        of a block."""
        barriers = waits.barriers(self._analysed.effects(), name, keys, self._planned)
        return self._host_reads(barriers)

    def runners_of(self, function: FunctionNode | str) -> set[str]:
        """The module-level functions whose code may run `function` (a `def` of the module,
        or the name it imports one by), through any chain of calls in the module."""
        if isinstance(function, str):
            return waits.runners_of(self._analysed.effects(), function)
        node = self._ast_function(function)
        return waits.runners_of(self._analysed.effects(), node) if node is not None else set()

    def plan_barriers(self, reads: HostReads) -> None:
        """Note that a fix puts barriers where `reads` says: another fix's barrier for a
        later read goes there too (the two fixes then overlap, and one barrier stays)."""
        for statement in reads.before:
            found = self._ast_statements([statement])
            if found is not None:
                self._planned.update(found[0])

    def _in_block(self, statement: Statement) -> bool:
        """Whether a statement can be put before `statement` (not before an `elif`)."""
        return isinstance(self.parent(statement), cst.Module | cst.IndentedBlock)

    def _ast_statements(
        self, statements: Sequence[Statement]
    ) -> tuple[list[ast.stmt], summaries.FunctionNode | None] | None:
        """The CPython statements at the places of `statements`, and the function whose body
        holds the first (None for module-level code)."""
        found = []
        for statement in statements:
            start = self._positions[statement].start
            node = self._where.statement(self._line_of(start.line), start.column)
            if node is None:
                return None
            found.append(node)
        owner = self.owner_function(statements[0])
        return found, self._ast_function(owner) if owner is not None else None

    def _top_defs(self) -> dict[str, list[int]]:
        """The lines of the file's top-level `def`s, by name (found once)."""
        if self._defs is None:
            module = self.facts.module
            self._defs = defaultdict(list)
            for fid, node in module.nodes.items():
                if module.declared_in.get(fid) == "<module>" and not isinstance(node, ast.Lambda):
                    self._defs[node.name].append(node.lineno)
        return self._defs

    def _holds_line(self, line: int) -> bool:
        """Whether the module analysed holds the file's `line` (a slice may not)."""
        if self._lines is None:
            code = self.module.code
            count = code.count("\n") + (not code.endswith("\n"))  # no line after the last
            self._lines = {self._line_of(n) for n in range(1, count + 1)}
        return line in self._lines

    def _statement_at(self, node: ast.stmt) -> Statement | None:
        """The LibCST statement that starts where `node` does."""
        if self._statements is None:
            self._statements = {}
            for candidate in self._positions:
                if isinstance(candidate, cst.SimpleStatementLine | cst.BaseCompoundStatement):
                    start = self._positions[candidate].start
                    self._statements[self._line_of(start.line), start.column] = candidate
        return self._statements.get(self._where.start(node))

    # ----- value tracing --------------------------------------------------------------------

    def assignments(self, name: cst.Name) -> list[Assignment]:
        """The bindings `name` may refer to where it stands (its scope's assignments)."""
        scope = self._scopes.get(name)
        if scope is None:
            return []
        return [a for a in scope[name.value] if isinstance(a, Assignment)]

    def _name_traced(self, name: cst.Name) -> bool:
        return self._traced(name)

    def _traced(self, expr: cst.BaseExpression, staged: bool = False) -> bool:
        """Whether the analysis finds `expr` certainly traced where it stands."""
        return self.facts.tracer_at(self._where.expression(self._span(expr)))


def _numpy_on_array(name: str) -> bool:
    """A NumPy function that runs on a `jax.Array` by calling its own method (`np.sum(x)` is
    `x.sum()`) or indexing it: the model table saw it work on a tracer. Not its host helpers
    (`np.testing.tempdir`, `np.printoptions`)."""
    short = name.removeprefix("numpy.")
    return short != name and short in ARRAY_METHOD_NUMPY and numpy_scipy.works(name)


def _handed_to_jax(parent: ast.AST, child: ast.expr) -> bool:
    """Whether `child` is a name handed to a call of a `jax` callable, as written
    (`jax.jit(f)`)."""
    if not isinstance(parent, ast.Call) or not isinstance(child, ast.Name | ast.Attribute):
        return False
    if child is parent.func:
        return False
    return ast.unparse(parent.func).startswith("jax.")


def _same_line(line: int) -> int:
    return line
