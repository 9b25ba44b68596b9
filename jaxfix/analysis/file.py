"""One file's analysis, done once on CPython's tree of the whole file.

The engine analyses the file before it decides whether LibCST is needed at all; the rules then
see the same facts through `jaxfix.fixes.tracing`, also when LibCST parses only a slice of the file
(its lines map back to the file's). What other modules need of the file (the calls its traced
code makes into them) is read here too, without LibCST.
"""

from __future__ import annotations

import ast
import bisect
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from jaxfix.analysis.bridge import Positions, first_line
from jaxfix.analysis.calls import DTYPE_QUERIES
from jaxfix.analysis.effects import EffectIndex
from jaxfix.analysis.external import KEYWORDS, External
from jaxfix.analysis.flow import analyse
from jaxfix.analysis.keeping import Keeping, Outliving
from jaxfix.analysis.keys import Keys
from jaxfix.analysis.reach import not_none_arguments
from jaxfix.analysis.reasons import THROUGH_CALLERS, Via
from jaxfix.analysis.summaries import Call, StaticClasses
from jaxfix.analysis.tracing import Facts, trace
from jaxfix.analysis.transform_arguments import python_valued_params
from jaxfix.analysis.values import Kind, Param, Staged
from jaxfix.models.parts import WholeModule
from jaxfix.models.transforms import (
    SHARDING,
    SHARDING_KEYWORDS,
    SHARDING_MODULES,
    STATIC_QUERIES,
    TRANSFORMS,
    TransformSpec,
)

# What a name of `SHARDING` or `SHARDING_MODULES` ends with, or a keyword of `SHARDING_KEYWORDS`:
# the text of a file that names one holds one of these.
_SHARDING_WORDS = frozenset(
    {name.rsplit(".", 1)[-1] for name in SHARDING}
    | {module.rstrip(".").rsplit(".", 1)[-1] for module in SHARDING_MODULES}
    | SHARDING_KEYWORDS
)


@dataclass
class FileAnalysis:
    """A file's syntax tree, text and traced-value facts."""

    tree: ast.Module
    text: str
    facts: Facts
    _positions: Positions | None = field(default=None, repr=False)
    _traced_calls: dict[ast.Call, Call] | None = field(default=None, repr=False)
    _undone: set[ast.Call] | None = field(default=None, repr=False)
    _lambda_bodies: dict[ast.AST, str] | None = field(default=None, repr=False)  # call -> fid
    _lambda_mutations: dict[ast.Call, bool] = field(default_factory=dict, repr=False)
    _kept_stores: dict[ast.stmt, Outliving] | None = field(default=None, repr=False)
    _calls: dict[ast.Call, Call] | None = field(default=None, repr=False)  # in traced code
    _static_given_traced: set[ast.Call] | None = field(default=None, repr=False)
    _effects: EffectIndex | None = field(default=None, repr=False)
    _keeping: Keeping | None = field(default=None, repr=False)
    _keys: Keys | None = field(default=None, repr=False)
    _sharded: bool | None = field(default=None, repr=False)

    @property
    def positions(self) -> Positions:
        """Where each expression and `def` stands (built when LibCST needs it)."""
        if self._positions is None:
            self._positions = Positions(self.tree, self.text)
        return self._positions

    @property
    def keeping(self) -> Keeping:
        """What traced code keeps: arrays, containers, plain objects (built when asked)."""
        if self._keeping is None:
            self._keeping = Keeping(self.facts)
        return self._keeping

    @property
    def keys(self) -> Keys:
        """What a hash in traced code would be asked of (built when asked)."""
        if self._keys is None:
            self._keys = Keys(self.facts, self.keeping)
        return self._keys

    def may_run_sharded(self) -> bool:
        """Whether the file shows a computation over several devices (`shard_map`, `pjit`,
        `pmap`, a mesh, a `jax.sharding` name, `jax.jit(..., in_shardings=...)`): where it
        does, its traced functions may run sharded, and JAX refuses ordered host callbacks
        there."""
        if self._sharded is None:
            # Such a name is spelled in the text, in the code or in an import: a large file
            # without one is not walked.
            spelled = any(word in self.text for word in _SHARDING_WORDS)
            self._sharded = spelled and any(map(self._names_sharding, ast.walk(self.tree)))
        return self._sharded

    def _names_sharding(self, node: ast.AST) -> bool:
        if isinstance(node, ast.keyword):
            return node.arg in SHARDING_KEYWORDS
        if not isinstance(node, ast.Name | ast.Attribute):
            return False
        name = self.facts.module.import_name(node)
        return name is not None and (name in SHARDING or name.startswith(SHARDING_MODULES))

    def guessed_parameter(self, node: ast.expr, fid: str) -> bool:
        """Whether `node` is a parameter (also reassigned: `axis = int(axis)`) that is a tracer
        only by a guess: of a function traced only because an unknown higher-order call
        applies it to traced data (`bool(leaf)` in a `tree_map` of a filter spec), or one that
        looks like a Python value (`n: int`, `axis=0`) in a function traced only through its
        callers."""
        if not isinstance(node, ast.Name):
            return False
        if not any(b.parameter for b in self.keeping.bindings(node.id, fid)):
            return False
        ways = self.facts.ways(fid)
        if not ways:
            return False
        if ways == {Via.APPLIED}:
            return True
        function = self.facts.module.nodes.get(fid)
        python_valued = function is not None and node.id in python_valued_params(function)
        return ways <= THROUGH_CALLERS and python_valued

    def given_sure_tracer(self, call: Call) -> bool:
        """Whether `call` gets a tracer (as an argument or its receiver), certainly and
        unguarded (as the rules ask: `TracedAnalysis.is_traced`), that is not a parameter
        whose tracer is a guess (see `guessed_parameter`)."""
        return any(
            self.facts.tracer_at(value) and not self.guessed_parameter(value, call.caller)
            for value in _inputs(call.node)
        )

    def only_read(self, name: str, methods: Collection[str], builtins: Collection[str]) -> bool:
        """Whether the module-level `name` is bound once, at the top level, and every other
        use of it in the file reads it: `name[k]` loaded, one of `methods` called on it, or
        given to one of `builtins` (`len`). A module constant: what it holds at import time it
        holds for good (as far as the file tells)."""
        bound = 0
        for parent in ast.walk(self.tree):
            if isinstance(parent, ast.Global | ast.Nonlocal) and name in parent.names:
                return False
            for child in ast.iter_child_nodes(parent):
                if not isinstance(child, ast.Name) or child.id != name:
                    continue
                if not isinstance(child.ctx, ast.Load):
                    bound += 1
                    if not (isinstance(parent, ast.Assign) and parent in self.tree.body):
                        return False
                elif not _reads(parent, child, methods, builtins):
                    return False
        return bound == 1

    def identifiers(self) -> set[str]:
        """Every name the file binds or reads (fresh names must clash with none of them)."""
        module = self.facts.module
        found = set(module.names_read)
        for scope in module.scopes.values():
            found |= scope.assigned
        for node in module.nodes.values():
            args = node.args
            every = [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]
            found.update(a.arg for a in every if a is not None)
        return found

    def effects(self) -> EffectIndex:
        """The file's host code, indexed for what a statement moved into a host callback
        writes and where host code reads it (built when a fix needs it)."""
        if self._effects is None:
            # The facts' method, not one of this analysis: the index would hold the analysis
            # that holds it, a reference cycle (the file's tree left to the cycle collector).
            self._effects = EffectIndex(
                self.facts.module, self.traced_function_nodes(), self.facts.is_traced
            )
        return self._effects

    def traced_calls(self) -> dict[ast.Call, Call]:
        """The unguarded calls in traced code given a certainly traced value, also one that
        is formatted or converted in the argument (`print(f"{x}")`, `log.info(float(x))`)."""
        if self._traced_calls is None:
            self._traced_calls = {
                call.node: call
                for summary in self.facts.traced_functions()
                for call in summary.calls
                if not call.guarded and self.carries(call.node)
            }
        return self._traced_calls

    def carries(self, node: ast.expr) -> bool:
        """Whether `node` is a tracer, or formats, converts or combines one."""
        if self.facts.is_traced(node):
            return True
        if isinstance(node, ast.Call):
            if self._is_static_query(node):
                return False  # `np.ndim(x)`, `jnp.result_type(x)`: no data needed
            return any(map(self.carries, _inputs(node)))
        if isinstance(node, ast.JoinedStr):
            formatted = (v.value for v in node.values if isinstance(v, ast.FormattedValue))
            return any(map(self.carries, formatted))
        if isinstance(node, ast.BinOp):
            return self.carries(node.left) or self.carries(node.right)
        if isinstance(node, ast.UnaryOp):
            return self.carries(node.operand)
        if isinstance(node, ast.GeneratorExp | ast.ListComp | ast.SetComp):
            return self.carries(node.elt)
        if isinstance(node, ast.Starred):
            return self.carries(node.value)
        if isinstance(node, ast.Tuple | ast.List | ast.Set):
            return any(map(self.carries, node.elts))
        if isinstance(node, ast.Dict):
            return any(map(self.carries, node.values))
        return False

    def call_in_traced(self, node: ast.Call) -> Call | None:
        """What the analysis knows of a call in traced code (None for other calls)."""
        if self._calls is None:
            self._calls = {c.node: c for s in self.facts.traced_functions() for c in s.calls}
        return self._calls.get(node)

    def _is_static_query(self, node: ast.Call) -> bool:
        """A call of a function that answers from a value's shape or dtype."""
        call = self.call_in_traced(node)
        callee = call.callee if call is not None else None
        return callee is not None and (
            callee in STATIC_QUERIES or callee.rsplit(".", 1)[-1] in DTYPE_QUERIES
        )

    def traced_function_nodes(self, with_enclosing: bool = False) -> set[ast.AST]:
        """The `def`s and lambdas that run under a trace (and the functions whose bodies
        define them, `with_enclosing`)."""
        module = self.facts.module
        fids = {s.id for s in self.facts.traced_functions()}
        if with_enclosing:
            for fid in list(fids):
                while (fid := module.declared_in.get(fid, "<module>")) != "<module>":
                    fids.add(fid)
        return {module.nodes[fid] for fid in fids if fid in module.nodes}

    def static_given_traced(self) -> set[ast.Call]:
        """Calls in traced code that give a tracer to a parameter the callee's jit declares
        static (see `Facts.static_given_traced`)."""
        if self._static_given_traced is None:
            self._static_given_traced = {c.node for c in self.facts.static_given_traced()}
        return self._static_given_traced

    def receives_traced(self, function: ast.AST | None) -> bool:
        """Whether the `def` or lambda has a parameter that is certainly a tracer."""
        fid = self.facts.module.by_node.get(function) if function is not None else None
        return fid is not None and any(
            isinstance(source, Param) and source.function == fid for source in self.facts.traced
        )

    def kept_stores(self) -> dict[ast.stmt, Outliving]:
        """Statements that store a leaking value into state that outlives the trace, with
        where that state lives (see `Keeping.kept_store`)."""
        if self._kept_stores is None:
            self._kept_stores = {}
            # Not only stores of tracers: `Keeping.leaks` also counts what converts one
            # (`STATUS["loss"] = str(loss)`), as JF103 and JF104 do.
            for store in self.facts.outliving_stores():
                found = self.keeping.kept_store(store.node, store.caller)
                if found is not None:
                    self._kept_stores[store.node] = found
        return self._kept_stores

    def kept_call(self, node: ast.Call) -> bool:
        """Whether the call, in traced code, puts a leaking value into a container that
        outlives the trace (see `Keeping.kept_call`)."""
        call = self.traced_calls().get(node)
        return call is not None and self.keeping.kept_call(node, call.caller) is not None

    def host_indexes(self) -> list[ast.Subscript]:
        """NumPy arrays indexed by a tracer in traced code (`TABLE[i]`): NumPy asks the tracer
        for its value (`TracerArrayConversionError`)."""
        module = self.facts.module
        found: list[ast.Subscript] = []
        for summary in self.facts.traced_functions():
            for node in summary.values:
                if not isinstance(node, ast.Subscript) or not isinstance(node.ctx, ast.Load):
                    continue
                base, key = module.value_of(node.value), module.value_of(node.slice)
                if (
                    base is not None
                    and key is not None
                    and self.facts.kind(base) is Kind.HOST
                    and self.facts.kind_at(key, node) is Kind.TRACED
                    and node not in module.guarded
                ):
                    found.append(node)
        return found

    def host_writes(self) -> list[ast.Subscript]:
        """NumPy arrays written in traced code with a tracer as the value (`TABLE[0] =
        x.sum()`) or in the index (`COUNTS[i] = 1.0`): NumPy asks the tracer for its value
        (`ConcretizationTypeError` for an element, `TracerArrayConversionError` for a slice or
        an index)."""
        module = self.facts.module
        found: list[ast.Subscript] = []
        for summary in self.facts.traced_functions():
            for store in summary.stores:
                node = store.node
                if store.guarded:
                    continue
                if isinstance(node, ast.Assign):
                    targets = node.targets
                elif isinstance(node, ast.AugAssign | ast.AnnAssign):
                    targets = [node.target]
                else:
                    continue
                value_traced = self.facts.kind_at(store.value, node) is Kind.TRACED
                for target in targets:
                    if not isinstance(target, ast.Subscript):
                        continue
                    key = module.value_of(target.slice)
                    if not value_traced and (
                        key is None or self.facts.kind_at(key, node) is not Kind.TRACED
                    ):
                        continue
                    base = module.value_of(target.value)
                    if (base is not None and self.facts.kind(base) is Kind.HOST) or (
                        isinstance(target.value, ast.Attribute)  # `self.rows = np.zeros(n)`
                        and self.keeping.made_by(target.value, store.caller, NUMPY_MAKERS)
                    ):
                        found.append(target)
        return found

    def mutates_in_lambda(self, call: ast.AST | None) -> bool:
        """Whether `call` is a method call that is a lambda's whole body, on a list, dict, set,
        deque or queue the code makes (`lambda leaf: LEAVES.append(leaf)`, which `tree_map`
        applies): the lambda returns the mutator's None, so its value counts as dropped, as a
        statement's. Decided for the calls asked about only (where a rule's method is called)."""
        if self._lambda_bodies is None:
            self._lambda_bodies = {
                node.body: fid
                for fid, node in self.facts.module.nodes.items()
                if isinstance(node, ast.Lambda)
                and isinstance(node.body, ast.Call)
                and isinstance(node.body.func, ast.Attribute)
            }
        if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Attribute):
            return False
        fid = self._lambda_bodies.get(call)
        if fid is None:
            return False
        known = self._lambda_mutations.get(call)
        if known is None:
            known = self._lambda_mutations[call] = self.keeping.is_container(call.func.value, fid)
        return known

    def undone_calls(self) -> set[ast.Call]:
        """Pushes in traced code that every exit undoes: `stack.append(v)` before or at the
        start of a `try:` whose `finally:` pops the same receiver (a context manager's scoped
        state). What they push is gone when the function returns: it leaks nothing."""
        if self._undone is None:
            self._undone = set()
            for function in self.traced_function_nodes():
                for block in _blocks(function):
                    self._undone |= _undone_in(block)
        return self._undone

    def calls_out(self) -> Iterator[tuple[str, Call, str, bool]]:
        """Each call traced code makes to an imported name: (the name as imported, the call,
        the caller's label, whether the caller is staged)."""
        for summary in self.facts.traced_functions():
            staged = Staged(summary.id) in self.facts.traced
            label = "<lambda>" if isinstance(summary.node, ast.Lambda) else summary.name
            for call in summary.calls:
                if call.node in self.facts.dead:
                    continue  # no calling context reaches it
                if call.callee is not None and isinstance(call.node.func, ast.Name | ast.Attribute):
                    yield call.callee, call, label, staged

    def transformed_imports(self) -> Iterator[tuple[str, External, str, str]]:
        """Each transform the file applies to a function it imports (`jax.grad(loss)`): (the
        name as imported, what the transform traces, as another module's entry into it, the
        transform, the label of the function applying it, "" at module level)."""
        module = self.facts.module
        for imported in module.imported_entries:
            caller = module.nodes.get(imported.caller)
            label = getattr(caller, "name", "<lambda>") if caller is not None else ""
            every = imported.positions is None
            entry = External(
                "",
                imported.positions or (),
                (KEYWORDS,) if every else (),
                imported.bound if every else None,
                imported.staged,
                "",
                imported.static_positions,
                imported.static_names,
                required_only=every,
            )
            yield imported.qualified, entry, imported.transform, label

    def traced_arguments(self, call: Call) -> tuple[list[int], list[str], int | None]:
        """Which arguments of `call` are certainly traced: positions, keywords (`KEYWORDS` for
        a traced `**kwargs`), and the first parameter position a traced `*args` / `**kwargs`
        (or a traced argument after a star, whose position is unknown) may fill, if any."""
        positions: list[int] = []
        keywords: list[str] = []
        rest_from: int | None = None
        star: int | None = None  # the index of the first `*args`
        guarded = self.facts.module.guarded
        for index, (node, value) in enumerate(zip(call.node.args, call.args, strict=True)):
            if isinstance(node, ast.Starred) and star is None:
                star = index
            if self.facts.kind_at(value, call.node) is not Kind.TRACED or node in guarded:
                continue
            if star is None:
                positions.append(index)
            elif rest_from is None:
                rest_from = star
        for keyword in call.node.keywords:
            given = call.keywords.get(keyword.arg or "**")
            if given is None or self.facts.kind_at(given, call.node) is not Kind.TRACED:
                continue
            if keyword.value in guarded:
                continue
            if keyword.arg is not None:
                keywords.append(keyword.arg)
                continue
            keywords.append(KEYWORDS)
            if rest_from is None:
                # What is given by position cannot be given by keyword too.
                rest_from = star if star is not None else len(call.node.args)
        return positions, keywords, rest_from

    def reordering_arguments(self, call: Call) -> tuple[list[int], list[str]]:
        """Which arguments of `call` may be dicts whose keys a flatten reorders (see
        `Facts.reorders`): positions (before any `*args`) and keywords."""
        positions: list[int] = []
        for index, (node, value) in enumerate(zip(call.node.args, call.args, strict=True)):
            if isinstance(node, ast.Starred):
                break
            if self.facts.reorders(value):
                positions.append(index)
        keywords = [
            k.arg
            for k in call.node.keywords
            if k.arg is not None and self.facts.reorders(call.keywords[k.arg])
        ]
        return positions, keywords

    def reorders(self, node: ast.AST | None) -> bool:
        """Whether `node` may hold a dict whose keys a flatten reorders, where it stands."""
        value = self.facts.module.value_of(node) if node is not None else None
        return value is not None and self.facts.reorders(value)

    def not_none_arguments(self, call: Call) -> tuple[list[int], list[str]]:
        """Which arguments of `call` are certainly not None: positions and keywords (see
        `reach.not_none_arguments`)."""
        return not_none_arguments(call, self.facts.module)

    def static_arguments(self, call: Call) -> tuple[list[int], list[str]]:
        """Which arguments of `call` are Python values (a literal, a dtype): positions and
        keywords."""
        positions = [
            index
            for index, (node, value) in enumerate(zip(call.node.args, call.args, strict=True))
            if not isinstance(node, ast.Starred) and self.facts.kind(value) is Kind.STATIC
        ]
        keywords = [
            k.arg
            for k in call.node.keywords
            if k.arg is not None and self.facts.kind(call.keywords[k.arg]) is Kind.STATIC
        ]
        return positions, keywords


def analyse_file(
    tree: ast.Module,
    text: str,
    transforms: Mapping[str, TransformSpec] = TRANSFORMS,
    external: Sequence[External] = (),
    traced_only: bool = False,
    whole: WholeModule | None = None,
    static_classes: StaticClasses = (),
) -> FileAnalysis:
    """Analyse `tree` (the syntax tree of `text`) with other modules' traced calls into it;
    with `traced_only`, for questions about traced code only (see `flow.analyse`); `whole`
    when `text` is a part of the module (see `jaxfix.models.parts`); `static_classes`: the
    metadata fields of the classes it imports from the run's other modules.
    The summaries of an earlier analysis of the same tree are reused; when this trace finds
    that they depend on the order they were asked for, it is done again afresh."""
    traced_only = traced_only and not external
    module = analyse(
        tree,
        transforms=transforms,
        traced_only=traced_only,
        whole=whole,
        static_classes=static_classes,
    )
    facts = trace(module, external)
    if module.reused and not module.reusable():
        module = analyse(
            tree,
            transforms=transforms,
            reuse=False,
            traced_only=traced_only,
            whole=whole,
            static_classes=static_classes,
        )
        facts = trace(module, external)
    return FileAnalysis(tree, text, facts)


def _inputs(call: ast.Call) -> list[ast.expr]:
    """What `call` is given: its arguments, then its receiver (`r` of `r.m(...)`)."""
    given = [*call.args, *(keyword.value for keyword in call.keywords)]
    if isinstance(call.func, ast.Attribute):
        given.append(call.func.value)
    return given


# A push and the pop that undoes it.
_UNDOING = {"append": "pop", "appendleft": "popleft"}
# NumPy's functions that make a new array (what `self.buffer = np.zeros(n)` holds).
NUMPY_MAKERS = frozenset(
    f"numpy.{name}"
    for name in (
        "array",
        "asarray",
        "copy",
        "empty",
        "empty_like",
        "full",
        "full_like",
        "ones",
        "ones_like",
        "zeros",
        "zeros_like",
        "arange",
        "linspace",
        "eye",
        "identity",
    )
)


def _blocks(function: ast.AST) -> Iterator[list[ast.stmt]]:
    """Every statement list in `function`'s own body (branches, loops, handlers; not nested
    functions, which are analysed on their own), by statements only: no expression is walked."""
    body = getattr(function, "body", None)
    pending = [body] if isinstance(body, list) else []
    while pending:
        block = pending.pop()
        yield block
        for statement in block:
            if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                continue
            for name in ("body", "orelse", "finalbody"):
                inner = getattr(statement, name, None)
                if inner:
                    pending.append(inner)
            for handler in getattr(statement, "handlers", ()):
                pending.append(handler.body)
            for case in getattr(statement, "cases", ()):
                pending.append(case.body)


def _undone_in(block: list[ast.stmt]) -> set[ast.Call]:
    """The pushes of `block` that a later `try: ... finally: r.pop()` of it undoes."""
    found: set[ast.Call] = set()
    for index, statement in enumerate(block):
        if not isinstance(statement, ast.Try | ast.TryStar) or not statement.finalbody:
            continue
        popped = {
            (method, ast.dump(func.value))
            for call in _expression_calls(statement.finalbody)
            if isinstance(func := call.func, ast.Attribute)
            for method in [func.attr]
        }
        for call in _expression_calls([*block[:index], *statement.body]):
            func = call.func
            if (
                isinstance(func, ast.Attribute)
                and func.attr in _UNDOING
                and (_UNDOING[func.attr], ast.dump(func.value)) in popped
            ):
                found.add(call)
    return found


def _expression_calls(statements: Sequence[ast.stmt]) -> Iterator[ast.Call]:
    """The calls that are whole expression statements (`r.pop()`)."""
    for statement in statements:
        if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call):
            yield statement.value


def _reads(
    parent: ast.AST, use: ast.Name, methods: Collection[str], builtins: Collection[str]
) -> bool:
    """Whether `use` (a loaded name) is read by `parent`, not changed or handed on."""
    if isinstance(parent, ast.Subscript):
        return parent.value is use and isinstance(parent.ctx, ast.Load)
    if isinstance(parent, ast.Attribute):
        return parent.attr in methods
    if isinstance(parent, ast.Call):
        func = parent.func
        return isinstance(func, ast.Name) and func.id in builtins and use is not func
    return False


def statement_index(tree: ast.Module) -> Callable[[ast.AST], int | None]:
    """A function giving the index of the top-level statement that holds a node."""
    firsts = [first_line(statement) for statement in tree.body]

    def index(node: ast.AST) -> int | None:
        line = getattr(node, "lineno", None)
        if line is None:
            return None
        found = bisect.bisect_right(firsts, line) - 1
        return found if found >= 0 else None

    return index
