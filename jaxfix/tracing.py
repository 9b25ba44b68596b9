"""Traced-context analysis: which functions of a module run under a JAX trace, and which values
in them are tracers.

Names are matched after import resolution (LibCST's scopes' qualified names), so `import jax as J`,
`from jax import lax` or `functools.partial(jax.jit, ...)` are recognised and a local variable
called `jax` is not. Tracing spreads from the entry points (decorators and transform call sites) to
nested functions and same-module functions called with traced arguments, until a fixpoint. Values
are traced by flow-insensitive propagation through assignments. When unsure, a value is *not*
traced: a false alarm costs more than a missed finding.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

import libcst as cst
from libcst.metadata import (
    Assignment,
    MetadataWrapper,
    PositionProvider,
    QualifiedName,
    QualifiedNameSource,
    Scope,
    ScopeProvider,
)

from jaxfix.project import Entry, Place, ProjectContext, TracedCall
from jaxfix.transforms import (
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
    TREE_MAPS,
    TransformSpec,
)

FunctionNode = cst.FunctionDef | cst.Lambda
# How many `a = b` aliases a name is followed through (a cycle `a = b; b = a` ends there).
MAX_ALIASES = 8
_NOT_ARRAY_METHODS = STRING_METHODS | {"keys"}
# A test that asks whether a value is a tracer (`not_jax_tracer(x)`, `core.is_concrete(x)`).
TRACER_CHECK = re.compile("tracer|concrete", re.IGNORECASE)


@dataclass
class TracedFunction:
    """A function (or lambda) whose body runs under a trace."""

    node: FunctionNode
    traced_params: set[str] = field(default_factory=set)
    staged: bool = False
    reasons: list[str] = field(default_factory=list)

    @property
    def label(self) -> str:
        return self.node.name.value if isinstance(self.node, cst.FunctionDef) else "<lambda>"


@dataclass(frozen=True)
class _Target:
    """A function an expression denotes, with what `functools.partial` already bound."""

    function: FunctionNode
    bound_positions: int = 0
    bound_keywords: frozenset[str] = frozenset()
    receiver: cst.BaseExpression | None = None  # the instance a method is called on


@dataclass
class _Owned:
    """What the module collector found directly inside one function body."""

    calls: list[cst.Call] = field(default_factory=list)
    bindings: list[tuple[cst.BaseExpression, cst.BaseExpression | None]] = field(
        default_factory=list
    )
    global_names: set[str] = field(default_factory=set)  # declared `global`
    nonlocal_names: set[str] = field(default_factory=set)  # declared `nonlocal`


_NOTHING = _Owned()


class _Collector(cst.CSTVisitor):
    """One pass over the module: calls, decorators and bindings, by the function that owns them;
    and each node's parent (LibCST's `ParentNodeProvider` costs a traversal of its own, and
    asks every node for its children)."""

    def __init__(self) -> None:
        self.parents: dict[cst.CSTNode, cst.CSTNode] = {}
        self.receivers: dict[str, set[str]] = defaultdict(set)  # `r.attr`: attr -> names r
        self._ancestors: list[cst.CSTNode] = []
        self.stack: list[FunctionNode | None] = [None]
        self.owned: dict[FunctionNode | None, _Owned] = {None: _Owned()}
        self.functions: list[FunctionNode] = []
        self.owner_of_function: dict[FunctionNode, FunctionNode | None] = {}
        self.class_of: dict[cst.FunctionDef, cst.ClassDef] = {}
        self.class_stack: list[cst.ClassDef] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        if self._ancestors:
            self.parents[node] = self._ancestors[-1]
        self._ancestors.append(node)
        return super().on_visit(node)

    def on_leave(self, original_node: cst.CSTNode) -> None:
        super().on_leave(original_node)
        self._ancestors.pop()

    def _enter(self, node: FunctionNode) -> None:
        self.functions.append(node)
        self.owner_of_function[node] = self.stack[-1]
        self.owned[node] = _Owned()

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self.class_stack.append(node)

    def leave_ClassDef(self, original_node: cst.ClassDef) -> None:
        self.class_stack.pop()

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        self._enter(node)
        if self.class_stack and self.stack[-1] is None:
            self.class_of[node] = self.class_stack[-1]
        # Decorators, defaults and annotations run in the enclosing function, the body inside.
        for decorator in node.decorators:
            decorator.visit(self)
        node.params.visit(self)
        self.stack.append(node)
        node.body.visit(self)
        self.stack.pop()
        return False

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        self._enter(node)
        node.params.visit(self)
        self.stack.append(node)
        node.body.visit(self)
        self.stack.pop()
        return False

    def _bind(self, target: cst.BaseExpression, value: cst.BaseExpression | None) -> None:
        self.owned[self.stack[-1]].bindings.append((target, value))

    def visit_Call(self, node: cst.Call) -> None:
        self.owned[self.stack[-1]].calls.append(node)

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if isinstance(node.value, cst.Name):
            self.receivers[node.attr.value].add(node.value.value)

    def visit_Global(self, node: cst.Global) -> None:
        self.owned[self.stack[-1]].global_names.update(item.name.value for item in node.names)

    def visit_Nonlocal(self, node: cst.Nonlocal) -> None:
        self.owned[self.stack[-1]].nonlocal_names.update(item.name.value for item in node.names)

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            self._bind(target.target, node.value)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._bind(node.target, node.value)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._bind(node.target, node.value)

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self._bind(node.target, node.value)

    def visit_For(self, node: cst.For) -> None:
        self._bind(node.target, node.iter)

    def visit_CompFor(self, node: cst.CompFor) -> None:
        self._bind(node.target, node.iter)

    def visit_WithItem(self, node: cst.WithItem) -> None:
        if node.asname is not None:
            self._bind(node.asname.name, node.item)


class TracedAnalysis:
    """The traced functions of one module and the traced values inside them."""

    def __init__(
        self,
        wrapper: MetadataWrapper,
        transforms: Mapping[str, TransformSpec] = TRANSFORMS,
        entries: Sequence[Entry] = (),
        project: ProjectContext = ProjectContext(),  # noqa: B008 - frozen, never mutated
    ) -> None:
        self.module = wrapper.module
        self._transforms = transforms
        self._entries = entries
        self.project = project
        # Resolved together first, in as few traversals as LibCST can (the rules need
        # positions too); `resolve` then answers from the wrapper's cache, typed.
        wrapper.resolve_many([ScopeProvider, PositionProvider])
        self._scopes: Mapping[cst.CSTNode, Scope | None] = wrapper.resolve(ScopeProvider)
        # Asked of the scopes for the nodes that need them: what `QualifiedNameProvider`
        # answers, without its traversal of every node.
        self._qualified: dict[cst.CSTNode, Collection[QualifiedName]] = {}
        collector = _Collector()
        self.module.visit(collector)
        self._collected = collector
        self._parents = collector.parents
        self.functions: dict[FunctionNode, TracedFunction] = {}
        self._traced_bindings: set[cst.CSTNode] = set()
        self._changed = False
        self._all_names: set[str] | None = None
        self._param_classes: dict[cst.Param, cst.ClassDef] | None = None
        self._find_entry_points()
        self._propagate()

    # ----- public queries -------------------------------------------------------------------

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

    def context_of(self, node: cst.CSTNode) -> TracedFunction | None:
        """The traced function `node` runs in, or None when it runs on the host."""
        owner = self.owner_function(node)
        return self.functions.get(owner) if owner is not None else None

    def is_traced(self, expr: cst.BaseExpression) -> bool:
        """Whether `expr` evaluates to a tracer (or a container of them) where it stands.
        Not in a branch of a tracer check (`if not_jax_tracer(x):`, `if isinstance(x,
        core.Tracer)`, `if core.is_concrete(x)`): such code knows what it holds."""
        context = self.context_of(expr)
        return (
            context is not None
            and self._traced(expr, context.staged)
            and not self._under_tracer_check(expr)
        )

    def _under_tracer_check(self, node: cst.CSTNode) -> bool:
        child, parent = node, self._parents.get(node)
        while parent is not None and not isinstance(parent, cst.FunctionDef | cst.Lambda):
            if (
                isinstance(parent, cst.If | cst.IfExp)
                and child is not parent.test
                and any(TRACER_CHECK.search(n.value) for n in _names_in(parent.test))
            ):
                return True
            child, parent = parent, self._parents.get(parent)
        return False

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

    def _owned(self, function: cst.CSTNode | None) -> _Owned:
        """What the body of `function` holds (nothing, for what is not a function)."""
        if isinstance(function, cst.FunctionDef | cst.Lambda):
            return self._collected.owned.get(function, _NOTHING)
        return _NOTHING

    def python_valued_params(self, function: FunctionNode) -> set[str]:
        """Parameters of `function` that look like Python values, not arrays (`n: int`,
        `axis=0`): what Equinox's `filter_*` treat as static."""
        return _python_valued_params(function)

    def receivers_of(self, attribute: str) -> set[str]:
        """The names the module reads `attribute` on (`f` for `f.cache_clear()`)."""
        return self._collected.receivers.get(attribute, set())

    def _qualified_names(self, node: cst.CSTNode) -> Collection[QualifiedName]:
        names = self._qualified.get(node)
        if names is None:
            scope = self._scopes.get(node)
            names = self._qualified[node] = scope.get_qualified_names_for(node) if scope else ()
        return names

    def parent(self, node: cst.CSTNode) -> cst.CSTNode | None:
        """The node `node` is a child of (None for the module)."""
        return self._parents.get(node)

    def scope_of(self, node: cst.CSTNode) -> Scope | None:
        return self._scopes.get(node)

    def all_names(self) -> set[str]:
        """Every identifier the module mentions (to pick names that clash with none)."""
        if self._all_names is None:
            self._all_names = {n.value for n in self._scopes if isinstance(n, cst.Name)}
            for scope in set(self._scopes.values()):
                if scope is not None:
                    self._all_names.update(a.name for a in scope.assignments)
        return self._all_names

    def function_of_name(self, name: cst.Name) -> FunctionNode | None:
        """The `def` or lambda a name is bound to, when it is bound to exactly one."""
        assignments = self.assignments(name)
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
        """Whether `name` is bound (only) by `name = <call to one of qualified>(...)`."""
        assignments = self.assignments(name)
        if not assignments:
            return False
        for assignment in assignments:
            target = self._parents.get(assignment.node)
            assign = self._parents.get(target) if target is not None else None
            if not (
                isinstance(assign, cst.Assign)
                and isinstance(assign.value, cst.Call)
                and self.imported_names(assign.value.func) & qualified
            ):
                return False
        return True

    def static_parameters(self, func: cst.BaseExpression) -> tuple[list[str], set[str]] | None:
        """For a callee that names a same-module function jitted with static arguments
        (`@partial(jax.jit, static_argnums=1)` on its def, or `g = jax.jit(f, static_argnames=
        "n")`): its positional parameter names and its static ones."""
        if not isinstance(func, cst.Name):
            return None
        function = self.function_of_name(func)
        found: list[tuple[TransformSpec, cst.Call | None, _Target]] = []
        if isinstance(function, cst.FunctionDef):
            for decorator in function.decorators:
                spec_call = self._transform_of(decorator.decorator)
                if spec_call is not None:
                    found.append((spec_call[1], spec_call[2], _Target(function)))
        value = self._aliased_call(func)
        transform = self._transform_call(value) if value is not None else None
        if value is not None and transform is not None and transform[1] is not None:
            found.append((self._transforms[transform[0]], value, transform[1]))
        for spec, options, target in found:
            if not spec.static_argnames_keywords:
                continue
            params = _positional_param_names(target.function)[target.bound_positions :]
            static = _static_params(spec, options, params)
            if static:
                return params, static
        return None

    def _aliased_call(self, name: cst.Name) -> cst.Call | None:
        """For a name bound exactly once, by `name = call(...)`, the call."""
        assignments = self.assignments(name)
        if len(assignments) != 1:
            return None
        target = self._parents.get(assignments[0].node)
        assign = self._parents.get(target) if isinstance(target, cst.AssignTarget) else None
        if isinstance(assign, cst.Assign) and isinstance(assign.value, cst.Call):
            return assign.value
        return None

    # ----- entry points ---------------------------------------------------------------------

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

    def calls_out(self, place: Place, packages: Collection[str]) -> list[TracedCall]:
        """The calls traced code makes to functions imported from `packages` (the run's), with
        which of their parameters receive traced values: the other modules' entries."""
        found: list[TracedCall] = []
        for entry in self.functions.values():
            label = f"{place.module}.{entry.label}" if place.module else entry.label
            for call in self._collected.owned[entry.node].calls:
                for name in sorted(self._project_names(call.func, place, packages)):
                    found.append(TracedCall(name, self._entry_for(call, entry, label)))
        return found

    def _project_names(
        self, func: cst.BaseExpression, place: Place, packages: Collection[str]
    ) -> set[str]:
        if not isinstance(func, cst.Name | cst.Attribute):
            return set()  # `make(lr)(x)` calls what `make` returns, not `make`
        names = {
            place.absolute(q.name)
            for q in self._qualified_names(func)
            if q.source is QualifiedNameSource.IMPORT
        }
        return {name for name in names if name.split(".")[0] in packages}

    def _entry_for(self, call: cst.Call, caller: TracedFunction, label: str) -> Entry:
        positions: list[int] = []
        keywords: list[str] = []
        all_params = False
        for index, arg in enumerate(call.args):
            if not self._traced(arg.value, caller.staged):
                continue
            if arg.star:
                all_params = True
            elif arg.keyword is not None:
                keywords.append(arg.keyword.value)
            else:
                positions.append(index)
        reason = f"called from traced `{label}`"
        return Entry("", tuple(positions), tuple(keywords), all_params, caller.staged, reason)

    def _find_entry_points(self) -> None:
        for entry in self._entries:
            self._enter_from_project(entry)
        for function in self._collected.functions:
            if isinstance(function, cst.FunctionDef):
                for decorator in function.decorators:
                    self._decorator_entry(function, decorator.decorator)
        for owned in self._collected.owned.values():
            for call in owned.calls:
                self._call_site_entry(call, staged_outside=False)
        for method, cls in self._collected.class_of.items():
            base = self._traced_module_base(cls)
            if base is not None:
                self._module_method_entry(method, base)

    def _traced_module_base(self, cls: cst.ClassDef) -> str | None:
        """`flax.linen.Module` or `haiku.Module`, when `cls` subclasses one directly."""
        for base in cls.bases:
            found = self.imported_names(base.value) & TRACED_MODULE_BASES
            if found:
                return min(found)
        return None

    def _module_method_entry(self, method: cst.FunctionDef, base: str) -> None:
        """A method of a linen / Haiku module: its inputs other than `self` and Python values
        (`train: bool = False`) are traced; not staged (`init` may run un-jitted)."""
        if any(
            _decorator_name(d.decorator) in {"staticmethod", "classmethod"}
            for d in method.decorators
        ):
            return
        params = _positional_param_names(method)[1:]
        params += [p.name.value for p in method.params.kwonly_params]
        traced = set(params) - _python_valued_params(method)
        self._mark(method, traced, False, f"a method of a `{base}`")

    def _enter_from_project(self, entry: Entry) -> None:
        """A top-level function that another module's traced code calls."""
        for statement in self.module.body:
            if isinstance(statement, cst.FunctionDef) and statement.name.value == entry.function:
                params = _positional_param_names(statement)
                traced = (
                    _param_names(statement)
                    if entry.all_params
                    else {params[i] for i in entry.positions if i < len(params)}
                    | (set(entry.keywords) & _param_names(statement))
                )
                self._mark(statement, traced, entry.staged, entry.reason)

    def _decorator_entry(self, function: cst.FunctionDef, decorator: cst.BaseExpression) -> None:
        spec_call = self._transform_of(decorator)
        if spec_call is not None:
            name, spec, call = spec_call
            self._enter(_Target(function), spec, call, f"decorated with `{name}`", False)
            return
        if (
            isinstance(decorator, cst.Attribute)
            and decorator.attr.value in CUSTOM_RULE_METHODS
            and isinstance(decorator.value, cst.Name)
            and self._is_custom_derivative(decorator.value)
        ):
            self._mark(function, _param_names(function), False, "a custom derivative rule")

    def _transform_of(
        self, expr: cst.BaseExpression
    ) -> tuple[str, TransformSpec, cst.Call | None] | None:
        """`T`, `T(**options)` or `partial(T, **options)` used as a decorator."""
        if not isinstance(expr, cst.Call):
            for name in self.imported_names(expr):
                if name in self._transforms:
                    return name, self._transforms[name], None
            return self._project_wrapper(expr)
        func_names = self.imported_names(expr.func)
        if PARTIAL in func_names and expr.args and expr.args[0].keyword is None:
            inner = self._transform_of(expr.args[0].value)
            if inner is not None and inner[2] is None:
                return inner[0], inner[1], expr
        if not any(arg.keyword is None for arg in expr.args):
            for name in func_names:
                if name in self._transforms:
                    return name, self._transforms[name], expr
        return None

    def _project_wrapper(
        self, expr: cst.BaseExpression
    ) -> tuple[str, TransformSpec, cst.Call | None] | None:
        """A function of this module that returns a transform applied to its first parameter
        (`def compiled(fn): return jax.jit(fn, donate_argnums=0)`): a decorator that traces."""
        function = self.function_of_name(expr) if isinstance(expr, cst.Name) else None
        if not isinstance(function, cst.FunctionDef) or not function.params.params:
            return None
        parameter = function.params.params[0].name.value
        for statement in function.body.body:
            line = statement.body[0] if isinstance(statement, cst.SimpleStatementLine) else None
            value = line.value if isinstance(line, cst.Return) else None
            if not isinstance(value, cst.Call) or not value.args:
                continue
            first = value.args[0]
            if first.keyword is not None or not (
                isinstance(first.value, cst.Name) and first.value.value == parameter
            ):
                continue
            for name in self.imported_names(value.func):
                spec = self._transforms.get(name)
                if spec is not None and spec.fun_positions[:1] == (0,):
                    return f"{function.name.value}`, which applies `{name}", spec, value
        return None

    def _call_site_entry(self, call: cst.Call, staged_outside: bool) -> None:
        """`jax.jit(f, ...)`, `lax.scan(body, ...)`, `f.defvjp(fwd, bwd)` and the like."""
        func = call.func
        if (
            isinstance(func, cst.Attribute)
            and func.attr.value in CUSTOM_RULE_METHODS
            and isinstance(func.value, cst.Name)
            and self._is_custom_derivative(func.value)
        ):
            for arg in call.args:
                target = self._callable(arg.value)
                if target is not None:
                    names = _param_names(target.function)
                    self._mark(target.function, names, False, "a custom derivative")
            return
        for name in self.imported_names(func):
            spec = self._transforms.get(name)
            if spec is None:
                continue
            for index, arg in enumerate(call.args):
                is_fun = (arg.keyword is None and index in spec.fun_positions) or (
                    arg.keyword is not None and arg.keyword.value in spec.fun_keywords
                )
                if not is_fun:
                    continue
                values = _elements(arg.value) if spec.fun_sequence else [arg.value]
                for value in values:
                    self._enter_callable(value, spec, call, name, staged_outside)

    def _enter_callable(
        self,
        value: cst.BaseExpression,
        spec: TransformSpec,
        call: cst.Call,
        name: str,
        staged_outside: bool,
    ) -> None:
        reason = f"passed to `{name}`"
        if isinstance(value, cst.Call) and self._transform_call(value) is not None:
            # A transform of a transform, `jax.jit(jax.grad(loss))`: the inner one declares its
            # own arguments, and the outer one traces whatever it receives too.
            self._call_site_entry(value, staged_outside or spec.staged)
            inner = self._transform_call(value)
            if inner is not None and inner[1] is not None:
                self._enter(inner[1], spec, call, reason, staged_outside)
            return
        target = self._callable(value)
        if target is not None:
            self._enter(target, spec, call, reason, staged_outside)

    def _transform_call(self, call: cst.Call) -> tuple[str, _Target | None] | None:
        """For `T(f, ...)`: the transform's name and the function it receives."""
        for name in self.imported_names(call.func):
            spec = self._transforms.get(name)
            if spec is None:
                continue
            for index, arg in enumerate(call.args):
                if (arg.keyword is None and index in spec.fun_positions[:1]) or (
                    arg.keyword is not None and arg.keyword.value in spec.fun_keywords[:1]
                ):
                    return name, self._callable(arg.value)
            return name, None
        return None

    def _callable(self, value: cst.BaseExpression) -> _Target | None:
        """The function an argument denotes, and what `functools.partial` binds of it."""
        if isinstance(value, cst.Lambda):
            return _Target(value)
        if isinstance(value, cst.Name | cst.Attribute):
            return self._callee(value)  # also a bound method: `jax.jit(self.step)`
        if (
            isinstance(value, cst.Call)
            and PARTIAL in self.imported_names(value.func)
            and value.args
            and value.args[0].keyword is None
        ):
            inner = self._callable(value.args[0].value)
            if inner is None:
                return None
            rest = value.args[1:]
            positions = sum(1 for arg in rest if arg.keyword is None and not arg.star)
            keywords = {arg.keyword.value for arg in rest if arg.keyword is not None}
            return _Target(
                inner.function,
                inner.bound_positions + positions,
                inner.bound_keywords | keywords,
            )
        return None

    def _enter(
        self,
        target: _Target,
        spec: TransformSpec,
        options: cst.Call | None,
        reason: str,
        staged_outside: bool,
    ) -> None:
        function = target.function
        bound = target.bound_positions + spec.leading_untraced
        params = _positional_param_names(function)[bound:]
        all_names = _param_names(function) - set(_positional_param_names(function)[:bound])
        static = _static_params(spec, options, params) | target.bound_keywords
        if spec.filtered:
            static |= _python_valued_params(function)
        if spec.argnums_keyword is not None or spec.default_argnums:
            argnums = (
                _int_tuple(_keyword(options, spec.argnums_keyword)) if spec.argnums_keyword else ()
            ) or spec.default_argnums
            traced = {params[i] for i in argnums if -len(params) <= i < len(params)}
        else:
            traced = set(all_names)
            traced -= _unbatched_params(spec, options, params)
        self._mark(function, traced - static, spec.staged or staged_outside, reason)

    def _is_custom_derivative(self, name: cst.Name) -> bool:
        function = self.function_of_name(name)
        if isinstance(function, cst.FunctionDef):
            for decorator in function.decorators:
                spec = self._transform_of(decorator.decorator)
                if spec is not None and spec[0] in CUSTOM_DERIVATIVES:
                    return True
        return self.is_assigned_from(name, CUSTOM_DERIVATIVES)

    # ----- propagation ----------------------------------------------------------------------

    def _mark(self, function: FunctionNode, traced: set[str], staged: bool, reason: str) -> None:
        entry = self.functions.get(function)
        if entry is None:
            entry = self.functions[function] = TracedFunction(function)
            self._changed = True
        if not traced <= entry.traced_params or (staged and not entry.staged):
            self._changed = True
        entry.traced_params |= traced
        entry.staged |= staged
        if reason not in entry.reasons:
            entry.reasons.append(reason)
        for param in _params(function):
            if param.name.value in entry.traced_params and param not in self._traced_bindings:
                self._traced_bindings.add(param)
                self._changed = True

    def _propagate(self) -> None:
        self._changed = True
        while self._changed:
            self._changed = False
            for entry in list(self.functions.values()):
                owned = self._collected.owned[entry.node]
                for target, value in owned.bindings:
                    self._bind(target, value, entry.staged)
                for call in owned.calls:
                    self._propagate_call(call, entry)

    def _bind(
        self, target: cst.BaseExpression, value: cst.BaseExpression | None, staged: bool
    ) -> None:
        if value is None:
            return
        if isinstance(target, cst.Tuple | cst.List):
            pairs = self._element_sources(target, value)
            if pairs is not None:
                for element, source in pairs:
                    self._bind(element, source, staged)
                return
        if not self._traced(value, staged):
            return
        for name in _store_names(target):
            if name not in self._traced_bindings:
                self._traced_bindings.add(name)
                self._changed = True

    def _element_sources(
        self, target: cst.Tuple | cst.List, value: cst.BaseExpression
    ) -> list[tuple[cst.BaseExpression, cst.BaseExpression | None]] | None:
        """Which part of `value` each element of an unpacking target receives, when known:
        `a, b = x, 1`, `for i, row in enumerate(x)` (i is an int), `for a, b in zip(x, y)`."""
        targets = [element.value for element in target.elements]
        if isinstance(value, cst.Tuple | cst.List):
            sources = [element.value for element in value.elements]
            return (
                list(zip(targets, sources, strict=True)) if len(sources) == len(targets) else None
            )
        if not isinstance(value, cst.Call) or any(arg.star for arg in value.args):
            return None
        func = value.func
        if isinstance(func, cst.Attribute) and func.attr.value == "items" and len(targets) == 2:
            return [(targets[0], None), (targets[1], func.value)]  # keys are hashable: no tracer
        names = self.imported_names(func)
        if "builtins.enumerate" in names and len(targets) == 2 and value.args:
            return [(targets[0], None), (targets[1], value.args[0].value)]
        if "builtins.zip" in names and len(targets) == len(value.args):
            return [(t, arg.value) for t, arg in zip(targets, value.args, strict=True)]
        return None

    def _propagate_call(self, call: cst.Call, caller: TracedFunction) -> None:
        if isinstance(call.func, cst.Call):
            # `jax.vmap(g)(x)` / `jax.grad(loss)(w, x)`: the arguments flow into g / loss too.
            inner = self._transform_call(call.func)
            if inner is not None:
                if inner[1] is not None:
                    self._propagate_arguments(call, inner[1], caller)
                return
            wrapped = self._wrapped_call(call.func)
            if wrapped is not None:
                self._propagate_arguments(call, wrapped, caller)
                return
        names = self.imported_names(call.func)
        if names & HOST_CALLBACKS:
            return
        if names & CALL_WRAPPERS:
            # `jax.named_call(f)`: calling what it returns calls f (see `_wrapped_call`).
            return
        if any(name in self._transforms for name in names):
            if caller.staged:
                self._call_site_entry(call, staged_outside=True)
            return
        callee = None if names & TREE_MAPS else self._callee(call.func)
        if callee is not None:
            self._propagate_arguments(call, callee, caller)
        else:
            self._propagate_higher_order(call, caller)

    def _wrapped_call(self, call: cst.Call) -> _Target | None:
        """For `jax.named_call(f, name=...)`: f, which the wrapper calls with its arguments."""
        if not call.args or call.args[0].keyword is not None:
            return None
        if not self.imported_names(call.func) & CALL_WRAPPERS:
            return None
        return self._callable(call.args[0].value)

    def _callee(self, func: cst.BaseExpression) -> _Target | None:
        """A same-module function being called: by its name, as a method of the same class
        via `self.`, or as a method (`__call__` too) of an instance of a same-module class."""
        if isinstance(func, cst.Name):
            function = self.function_of_name(func)
            if function is not None:
                return _Target(function)
            receiver, method = func, self._instance_method(func, "__call__")
        elif isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name):
            receiver = func.value
            method = self._method_of_self(receiver, func.attr.value) or self._instance_method(
                receiver, func.attr.value
            )
        else:
            return None
        return _Target(method, bound_positions=1, receiver=receiver) if method else None

    def _instance_method(self, receiver: cst.Name, attr: str) -> cst.FunctionDef | None:
        """`attr` of the same-module class `receiver` is an instance of (`_instance_class`)."""
        cls = self._instance_class(receiver)
        method = _method_named(cls, attr) if cls is not None else None
        if method is None or not _is_instance_method(method):
            return None
        return method

    def _instance_class(self, name: cst.Name) -> cst.ClassDef | None:
        """The same-module class `name` holds an instance of: a name bound only by calls of it
        (`m = MLP(...)`), or a parameter annotated with it (`model: MLP`) or given only such
        names by the module's calls of its function."""
        classes: set[cst.ClassDef] = set()
        for assignment in self.assignments(name):
            cls = self._class_instantiated(assignment.node)
            if cls is None:
                return None
            classes.add(cls)
        return classes.pop() if len(classes) == 1 else None

    def _class_instantiated(self, bound: cst.CSTNode) -> cst.ClassDef | None:
        parent = self._parents.get(bound)
        if isinstance(bound, cst.Param):
            annotation = bound.annotation.annotation if bound.annotation else None
            return self.class_named(annotation) or self._passed_instances().get(bound)
        if isinstance(parent, cst.AssignTarget):
            assign = self._parents.get(parent)
            if isinstance(assign, cst.Assign) and isinstance(assign.value, cst.Call):
                return self.class_named(assign.value.func)
        return None

    def _passed_instances(self) -> dict[cst.Param, cst.ClassDef]:
        """Parameters that the module's calls of their function (`step(model, x)`, also
        `eqx.filter_grad(loss)(model, x)`) give instances of one same-module class only."""
        if self._param_classes is None:
            self._param_classes = {}
            for _ in range(MAX_ALIASES):  # a chain of calls hands the instance on
                found = self._instances_given()
                if found == self._param_classes:
                    break
                self._param_classes = found
        return self._param_classes

    def _instances_given(self) -> dict[cst.Param, cst.ClassDef]:
        given: dict[cst.Param, set[cst.ClassDef | None]] = defaultdict(set)
        for owned in self._collected.owned.values():
            for call in owned.calls:
                for param, value in self._arguments_of(call):
                    name = value if isinstance(value, cst.Name) else None
                    given[param].add(self._instance_class(name) if name else None)
        return {
            param: cls
            for param, classes in given.items()
            if len(classes) == 1
            for cls in classes
            if cls is not None
        }

    def _arguments_of(self, call: cst.Call) -> Iterator[tuple[cst.Param, cst.BaseExpression]]:
        """Each argument of a call of a same-module function, with the parameter it binds."""
        func = call.func
        wrapped = self._transform_call(func) if isinstance(func, cst.Call) else None
        target = wrapped[1] if wrapped is not None else self._function_called(func)
        if target is None or target.bound_keywords or target.receiver is not None:
            return
        signature = target.function.params
        positional = [*signature.posonly_params, *signature.params][target.bound_positions :]
        by_name = {p.name.value: p for p in (*signature.params, *signature.kwonly_params)}
        for index, arg in enumerate(call.args):
            if arg.star:
                return
            if arg.keyword is not None:
                if arg.keyword.value in by_name:
                    yield by_name[arg.keyword.value], arg.value
            elif index < len(positional):
                yield positional[index], arg.value

    def _function_called(self, func: cst.BaseExpression) -> _Target | None:
        function = self.function_of_name(func) if isinstance(func, cst.Name) else None
        return _Target(function) if function is not None else None

    def class_named(self, expr: cst.BaseExpression | None) -> cst.ClassDef | None:
        """The class of the module a name is bound to, when it is bound only to it."""
        if not isinstance(expr, cst.Name):
            return None
        assignments = self.assignments(expr)
        if len(assignments) == 1 and isinstance(assignments[0].node, cst.ClassDef):
            return assignments[0].node
        return None

    def _method_of_self(self, receiver: cst.Name, attr: str) -> cst.FunctionDef | None:
        owner = self.owner_function(receiver)
        if not isinstance(owner, cst.FunctionDef) or owner not in self._collected.class_of:
            return None
        params = _positional_param_names(owner)
        if not params or params[0] != receiver.value:
            return None
        return _method_named(self._collected.class_of[owner], attr)

    def _propagate_arguments(self, call: cst.Call, target: _Target, caller: TracedFunction) -> None:
        """The callee runs under the caller's trace; the parameters given tracers are traced."""
        function = target.function
        params = _positional_param_names(function)[target.bound_positions :]
        keyword_names = _param_names(function) - target.bound_keywords
        traced: set[str] = set()
        if target.receiver is not None and self._traced(target.receiver, caller.staged):
            traced.add(_positional_param_names(function)[0])  # `self` holds tracers
        for index, arg in enumerate(call.args):
            if not self._traced(arg.value, caller.staged):
                continue
            if arg.star:
                traced.update(params if arg.star == "*" else keyword_names)
            elif arg.keyword is not None:
                if arg.keyword.value in keyword_names:
                    traced.add(arg.keyword.value)
            elif index < len(params):
                traced.add(params[index])
        self._mark(function, traced, caller.staged, f"called from traced `{caller.label}`")

    def _propagate_higher_order(self, call: cst.Call, caller: TracedFunction) -> None:
        """An unknown callable given a function and traced data applies one to the other;
        not a thread's or process's `target=`, which runs outside the trace (JF105's)."""
        functions = [
            None if _is_keyword(arg, "target") else self._callable(arg.value) for arg in call.args
        ]
        if not any(functions):
            return
        data_traced = any(
            self._traced(arg.value, caller.staged)
            for arg, function in zip(call.args, functions, strict=True)
            if function is None
        )
        if not data_traced:
            return
        for target in functions:
            if target is not None:
                names = set(_positional_param_names(target.function)[target.bound_positions :])
                self._mark(target.function, names, caller.staged, "applied to traced values")

    # ----- value tracing --------------------------------------------------------------------

    def assignments(self, name: cst.Name) -> list[Assignment]:
        """The bindings `name` may refer to where it stands (its scope's assignments)."""
        scope = self._scopes.get(name)
        if scope is None:
            return []
        return [a for a in scope[name.value] if isinstance(a, Assignment)]

    def _name_traced(self, name: cst.Name) -> bool:
        return any(a.node in self._traced_bindings for a in self.assignments(name))

    def _traced(self, expr: cst.BaseExpression, staged: bool) -> bool:
        if isinstance(expr, cst.Name):
            return self._name_traced(expr)
        if isinstance(expr, cst.Attribute):
            return expr.attr.value not in STATIC_ATTRIBUTES and self._traced(expr.value, staged)
        if isinstance(expr, cst.Lambda | cst.BaseString | cst.Integer | cst.Float | cst.Imaginary):
            return False
        if isinstance(expr, cst.Set | cst.SetComp):
            return False  # a set cannot hold a tracer (unhashable)
        if isinstance(expr, cst.Call):
            return self._call_traced(expr, staged)
        return any(self._traced(child, staged) for child in _child_expressions(expr))

    def _call_traced(self, call: cst.Call, staged: bool) -> bool:
        names = self.imported_names(call.func)
        if names & STATIC_QUERIES:
            return False
        if isinstance(call.func, cst.Attribute) and call.func.attr.value in _NOT_ARRAY_METHODS:
            return False  # dict keys are hashable, `str` methods give strings: never tracers
        if staged and any(n.startswith(STAGED_ARRAY_NAMESPACES) for n in names):
            return True
        if isinstance(call.func, cst.Attribute) and self._traced(call.func.value, staged):
            return True
        return any(self._traced(arg.value, staged) for arg in call.args)


# ----- syntax helpers -----------------------------------------------------------------------


def _is_keyword(arg: cst.Arg, keyword: str) -> bool:
    return arg.keyword is not None and arg.keyword.value == keyword


def _names_in(expr: cst.CSTNode) -> Iterator[cst.Name]:
    """Every name in `expr`, also attribute names (`core.Tracer` gives `core` and `Tracer`)."""
    if isinstance(expr, cst.Name):
        yield expr
    for child in expr.children:
        yield from _names_in(child)


def _method_named(cls: cst.ClassDef, name: str) -> cst.FunctionDef | None:
    for statement in cls.body.body:
        if isinstance(statement, cst.FunctionDef) and statement.name.value == name:
            return statement
    return None


def _is_instance_method(method: cst.FunctionDef) -> bool:
    return not any(
        _decorator_name(d.decorator) in {"staticmethod", "classmethod", "property"}
        for d in method.decorators
    ) and bool(_positional_param_names(method))


def _params(function: FunctionNode) -> Iterator[cst.Param]:
    p = function.params
    yield from p.posonly_params
    yield from p.params
    if isinstance(p.star_arg, cst.Param):
        yield p.star_arg
    yield from p.kwonly_params
    if p.star_kwarg is not None:
        yield p.star_kwarg


def _param_names(function: FunctionNode) -> set[str]:
    return {param.name.value for param in _params(function)}


def _positional_param_names(function: FunctionNode) -> list[str]:
    p = function.params
    return [param.name.value for param in (*p.posonly_params, *p.params)]


def _keyword(call: cst.Call | None, keyword: str) -> cst.BaseExpression | None:
    if call is None:
        return None
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == keyword:
            return arg.value
    return None


def _elements(expr: cst.BaseExpression | None) -> list[cst.BaseExpression]:
    if isinstance(expr, cst.Tuple | cst.List):
        return [element.value for element in expr.elements]
    return [expr] if expr is not None else []


def _int_tuple(expr: cst.BaseExpression | None) -> tuple[int, ...]:
    values: list[int] = []
    for element in _elements(expr):
        if isinstance(element, cst.Integer):
            values.append(int(element.evaluated_value))
        elif (
            isinstance(element, cst.UnaryOperation)
            and isinstance(element.operator, cst.Minus)
            and isinstance(element.expression, cst.Integer)
        ):
            values.append(-int(element.expression.evaluated_value))
    return tuple(values)


def _str_tuple(expr: cst.BaseExpression | None) -> tuple[str, ...]:
    values: list[str] = []
    for element in _elements(expr):
        if isinstance(element, cst.SimpleString):
            evaluated = element.evaluated_value
            if isinstance(evaluated, str):
                values.append(evaluated)
    return tuple(values)


def _static_params(
    spec: TransformSpec, options: cst.Call | None, params: Sequence[str]
) -> set[str]:
    static: set[str] = set()
    for keyword in spec.static_argnums_keywords:
        static.update(
            params[i]
            for i in _int_tuple(_keyword(options, keyword))
            if -len(params) <= i < len(params)
        )
    for keyword in spec.static_argnames_keywords:
        static.update(_str_tuple(_keyword(options, keyword)))
    return static


def _python_valued_params(function: FunctionNode) -> set[str]:
    """Parameters that look like Python values, not arrays: annotated with a Python type
    (`n: int`, `act: Callable[...]`, `k: int | None`) or defaulting to a literal (`n=3`)."""
    return {
        param.name.value
        for param in _params(function)
        if _python_annotated(param) or _literal_default(param)
    }


def _python_annotated(param: cst.Param) -> bool:
    annotation = param.annotation
    return annotation is not None and _annotation_names(annotation.annotation) <= PYTHON_TYPES


def _literal_default(param: cst.Param) -> bool:
    default = param.default
    return isinstance(default, cst.BaseNumber | cst.BaseString) or (
        isinstance(default, cst.Name) and default.value in {"True", "False", "None"}
    )


def _decorator_name(decorator: cst.BaseExpression) -> str | None:
    return decorator.value if isinstance(decorator, cst.Name) else None


def _annotation_names(annotation: cst.BaseExpression) -> set[str]:
    """The type names an annotation is made of (`Callable[[int], int] | None` -> Callable, int,
    None); an unknown shape gives a name no Python type has."""
    if isinstance(annotation, cst.Name):
        return {annotation.value}
    if isinstance(annotation, cst.Attribute):
        return {annotation.attr.value}
    if isinstance(annotation, cst.BinaryOperation) and isinstance(annotation.operator, cst.BitOr):
        return _annotation_names(annotation.left) | _annotation_names(annotation.right)
    if isinstance(annotation, cst.Subscript):
        return _annotation_names(annotation.value)
    return {"<unknown>"}


def _unbatched_params(
    spec: TransformSpec, options: cst.Call | None, params: Sequence[str]
) -> set[str]:
    """Parameters vmap passes through unbatched (`in_axes` entry None): they stay concrete."""
    if spec.in_axes_keyword is None:
        return set()
    in_axes = _keyword(options, spec.in_axes_keyword)
    if (
        in_axes is None
        and options is not None
        and len(options.args) > 1
        and options.args[1].keyword is None
    ):
        in_axes = options.args[1].value
    if not isinstance(in_axes, cst.Tuple | cst.List):
        return set()
    return {
        params[i]
        for i, element in enumerate(_elements(in_axes))
        if i < len(params) and isinstance(element, cst.Name) and element.value == "None"
    }


def _store_names(target: cst.BaseExpression) -> Iterator[cst.Name]:
    if isinstance(target, cst.Name):
        yield target
    elif isinstance(target, cst.Tuple | cst.List):
        for element in target.elements:
            yield from _store_names(element.value)
    elif isinstance(target, cst.StarredElement):
        yield from _store_names(target.value)


def _child_expressions(node: cst.CSTNode) -> Iterator[cst.BaseExpression]:
    """Sub-expressions of `node`, looking through wrappers such as Arg or Element."""
    for child in node.children:
        if isinstance(child, cst.BaseExpression):
            yield child
        elif not isinstance(child, cst.BaseSuite | cst.BaseStatement):
            yield from _child_expressions(child)


def names_read(node: cst.CSTNode) -> Iterator[cst.Name]:
    """Every Name under `node` that is not an attribute name, a keyword or a parameter."""
    if isinstance(node, cst.Name):
        yield node
        return
    if isinstance(node, cst.Attribute):
        yield from names_read(node.value)
        return
    for child in node.children:
        if isinstance(child, cst.Arg):
            yield from names_read(child.value)
        elif not isinstance(child, cst.Param):
            yield from names_read(child)
