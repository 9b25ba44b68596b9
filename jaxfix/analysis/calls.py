"""The calls of a function body, for the interpreter (`jaxfix.analysis.interpreter`): what each
call gives and receives (`Call` in the summary), through transforms, wrappers, `partial`,
custom derivatives and the functions they enter; and the state of one body's interpretation,
which the expressions and statements share."""

from __future__ import annotations

import ast
from collections.abc import Collection, Mapping

from jaxfix.analysis import values as v
from jaxfix.analysis.declarations import (
    RECORD_BASES,
    is_record_class,
)
from jaxfix.analysis.reach import not_none, raised_on, reach_unless
from jaxfix.analysis.reasons import Reason, Via
from jaxfix.analysis.summaries import (
    Call,
    Entry,
    Env,
    FunctionNode,
    ImportedEntry,
    Module,
    Summary,
    bind_arguments,
    params_of,
    qualified_name,
    static_method,
    substitute,
)
from jaxfix.analysis.transform_arguments import (
    _argnums,
    _static_arguments,
    _static_params,
    _unbatched,
    _unbatched_positions,
    python_valued_params,
)
from jaxfix.analysis.values import (
    HOST,
    INSTANCE,
    JAX_OBJECT,
    JAX_OBJECT_MAKER,
    STATIC,
    UNKNOWN,
    Kind,
    Source,
    Staged,
    Value,
    class_named,
    instance_class,
)
from jaxfix.analysis.walk import PUSHERS
from jaxfix.models.jax_objects import (
    OBJECT_CLASSES,
    OBJECT_MAKERS,
    OBJECT_RESULTS,
    OBJECT_TRANSFORMS,
)
from jaxfix.models.transforms import (
    ABSTRACT_TRANSFORMS,
    CALL_WRAPPERS,
    CUSTOM_DERIVATIVES,
    CUSTOM_RULE_METHODS,
    FLATTENS,
    FLATTENS_WITH_PATH,
    LEAVES_WITH_PATH,
    PARTIAL,
    STAGED_ARRAY_NAMESPACES,
    STATIC_QUERIES,
    STRING_METHODS,
    STRUCTURE_QUERIES,
    TransformSpec,
)

# Builtins whose result is a Python value whatever they are given (some raise on a tracer:
# that is what `calls` records).
_PYTHON_VALUED = frozenset(
    {"builtins." + n for n in ("int", "float", "bool", "complex", "str", "repr", "hash", "id")}
    | {"builtins.len", "builtins.type", "builtins.isinstance", "builtins.callable"}
)
# Methods of an array that give a Python value (`x.item()`); the rest give arrays.
PYTHON_VALUED_METHODS = frozenset({"item", "tolist", "tobytes", "__array__", "__index__"})
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
# Builtins that make a list or tuple of what iterating their argument gives.
_SEQUENCE_BUILTINS = frozenset({"builtins.tuple", "builtins.list", "builtins.sorted"})
_DICT_VIEWS = frozenset({"items", "values"})


class CallEvaluator:
    """The state of one function body's interpretation, and its calls."""

    def __init__(
        self,
        module: Module,
        transforms: Mapping[str, TransformSpec],
        fid: str,
        node: FunctionNode | ast.Module,
        parent: CallEvaluator | None,
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
        # The parameters' values as the body starts; the facts under which no way out but a
        # raise is reached, once one is (see `Interpreter._exit`).
        self.initial: Env = {}
        self.exits: frozenset[Source] | None = None
        self.returns = 0  # the `return` statements met so far
        self.raising = 0  # inside `raise` / `assert` statements (see `Call.raising`)
        self.compile_time = 0
        self.is_module = isinstance(node, ast.Module)

    def _element(self, iterable: Value) -> Value:
        if iterable == JAX_OBJECT:
            return iterable  # `for eqn in jaxpr.eqns`
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

    def _fields(self, class_name: str, call: Call) -> tuple[tuple[str, Value], ...] | None:
        """What a call of the module's dataclass or named tuple `class_name` gives each field
        (its own annotated names, in order, take the positional arguments); None for another
        class, or arguments that cannot be matched to fields (positions, with a base class)."""
        cls = self.module.classes.get(class_name)
        if cls is None or not is_record_class(cls, self.module):
            return None
        names = [
            statement.target.id
            for statement in cls.body
            if isinstance(statement, ast.AnnAssign)
            and isinstance(statement.target, ast.Name)
            and "ClassVar" not in ast.unparse(statement.annotation)
        ]
        inherits = any(qualified_name(base, self.module) not in RECORD_BASES for base in cls.bases)
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

    def _attribute_instance(self, class_name: str, attr: str) -> str | None:
        """The module's class of which every value its methods give `self.<attr>` is a new
        instance (`self.logger = MetricsLogger()` in `__init__`); None for anything else."""
        self._note_attribute_writes(class_name)
        return self.module.attribute_instances[class_name].get(attr)

    def _array_attribute(self, class_name: str, attr: str) -> bool:
        """Every value the methods of the module's class `class_name` give `self.<attr>` is a
        jax array (`self.count = jnp.int32(0)`, `self.count = self.count + 1`)."""
        self._note_attribute_writes(class_name)
        return attr in self.module.array_attributes[class_name]

    def _note_attribute_writes(self, class_name: str) -> None:
        """What the writes of `self.<attr>` in the class' methods make, found in one walk."""
        module = self.module
        if class_name not in module.attribute_instances:
            cls = module.classes.get(class_name)
            writes = _attribute_writes(cls) if cls is not None else {}
            module.attribute_instances[class_name] = _assigned_instances(writes, module)
            module.array_attributes[class_name] = _assigned_arrays(writes, module)

    # -- calls -----------------------------------------------------------------------------

    def _callee_name(self, func: ast.expr, env: Env) -> str | None:
        return self.expr(func, env).qualified

    def _result(self, call: Call, func: Value, env: Env) -> Value:
        callee = call.callee
        operands = [*call.values(), *([call.receiver] if call.receiver else [])]
        if func == JAX_OBJECT_MAKER:
            return JAX_OBJECT  # `jax.make_jaxpr(f)(x)`: a closed jaxpr
        if (made_class := class_named(func)) is not None:
            fields = self._fields(made_class, call)
            return Value(Kind.UNKNOWN, qualified=INSTANCE + made_class, fields=fields)
        if callee is not None:
            if not call.args:
                self.module.static_queries.add(callee)
            if not call.args and callee in self.module.static_classes:
                # `System(mass=m)`, of a class another module declares metadata fields of:
                # each field holds what it is given (by keyword: by position, which field is
                # given what is unknown), the others their defaults.
                fields = tuple(call.keywords.items()) if "**" not in call.keywords else None
                made = _unresolved(operands)
                return made._replace(qualified=INSTANCE + callee, fields=fields)
            if callee in STATIC_QUERIES or callee in _PYTHON_VALUED or callee in STRUCTURE_QUERIES:
                return STATIC
            if callee in FLATTENS or callee in FLATTENS_WITH_PATH or callee in LEAVES_WITH_PATH:
                return _flattened(callee, operands)
            if callee.rsplit(".", 1)[-1] in _STATIC_BY_NAME:
                return STATIC
            if callee in OBJECT_CLASSES or callee in OBJECT_MAKERS:
                return JAX_OBJECT
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
                    bound_not_none=inner.bound_not_none | self._not_none_keywords(call),
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
                call.args or "**" in call.keywords or not sorted_strings(call.keywords)
            ):
                return UNKNOWN._replace(reorders=True)  # its keys in the order given
            if callee in _SEQUENCE_BUILTINS and len(call.args) == 1 and not call.keywords:
                given = call.args[0]  # `tuple(labels)`: its elements, as iterating gives them
                if given.element is not None:
                    return v.combine(operands)._replace(element=self._element(given))
            if callee.startswith("builtins."):
                return v.combine(operands) if callee in _ARRAY_BUILTINS else UNKNOWN
            return _unresolved(operands)
        if func.function is not None:
            if self._makes_objects(func):
                return JAX_OBJECT
            if func.function in self.module.transformed:
                # A jitted function called from this code: traced when this code is.
                return v.traced(v.sources_of(operands) | {Staged(self.summary.id)})
            wrapped = self._wrap(func, call)
            if wrapped is not None:
                return wrapped
            return self._apply(func.function, call, env)
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

    def _apply(self, target: str, call: Call, env: Env) -> Value:
        """The callee's return value with its parameters' conditions replaced by what this
        call gives them; what follows the call is not reached where it certainly raises."""
        if self.is_module and target in self.module.pending:
            return UNKNOWN  # the module's names are not all known yet: nothing to run it with
        own = target == self.summary.id or self._encloses(target)
        if not own:
            if self.module.in_cycle(self.summary.id, target):
                return UNKNOWN  # whichever of the two is asked for first, neither sees the other
            if target in self.module.running:
                self.module.order_dependent = True
        summary = self.module.summary_of(target)
        if summary is None:
            return UNKNOWN
        reach_unless(env, raised_on(summary, call, self.summary.id))
        if summary.returns is None:
            return UNKNOWN
        given = bind_arguments(summary, call)
        return substitute(summary.returns, target, given, self.summary.id)

    def _makes_objects(self, func: Value) -> bool:
        """Whether `func` is a function of the module transformed into one that returns JAX's
        objects (`@jax.make_jaxpr` on its `def`)."""
        entries = self.module.entries
        return (
            func.entry is not None
            and func.entry < len(entries)
            and entries[func.entry].transform in OBJECT_TRANSFORMS
        )

    def _not_none_keywords(self, call: Call) -> frozenset[str]:
        """The keywords `call` gives a value that is certainly not None (`partial(f, k=3)`)."""
        return frozenset(
            k.arg
            for k in call.node.keywords
            if k.arg is not None and not_none(k.value, call.keywords[k.arg], self.module)
        )

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
        if call.callee in OBJECT_RESULTS:
            return JAX_OBJECT  # `jax.eval_shape(f, x)`: shape structs
        first = call.args[0] if call.args else None
        if first is not None and first.function is not None:
            entry = len(self.module.entries) - 1 if self.module.entries else None
            return Value(Kind.UNKNOWN, function=first.function, entry=entry)
        return JAX_OBJECT_MAKER if call.callee in OBJECT_TRANSFORMS else UNKNOWN

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
            name = qualified_name(returned.func, self.module)
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
        instance_of = instance_class(target)
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
        if target.function in self.module.owners and not static_method(function):
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
                not_none=target.bound_not_none,
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

    # -- what the expressions and the statements add -----------------------------------------

    def bind(self, target: ast.expr, value: Value, env: Env, statement: ast.stmt) -> None:
        """Bind `target` to `value` in `env` (`Interpreter.bind`)."""
        raise NotImplementedError

    def nested(self, node: FunctionNode, env: Env, class_name: str | None = None) -> str:
        """Interpret a function defined here (`Interpreter.nested`)."""
        raise NotImplementedError

    def expr(self, node: ast.expr, env: Env) -> Value:
        """The value of `node` (`Evaluator.expr`)."""
        raise NotImplementedError


def sorted_strings(keys: Collection[object]) -> bool:
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


def _flattened(callee: str, operands: list[Value]) -> Value:
    """What a flatten gives: its leaves as given (arrays made from them), the structure (a
    `PyTreeDef`, one of JAX's own objects) and each leaf's path (its keys) Python values."""
    leaves = _unresolved(operands)
    if callee in FLATTENS:
        return Value(Kind.UNKNOWN, elements=(leaves, JAX_OBJECT))
    pairs = Value(Kind.UNKNOWN, element=Value(Kind.UNKNOWN, elements=(STATIC, leaves)))
    if callee in LEAVES_WITH_PATH:
        return pairs
    return Value(Kind.UNKNOWN, elements=(pairs, JAX_OBJECT))


PYTHON_TYPE_NAMES = frozenset(
    {"type", "int", "float", "bool", "complex", "str", "bytes", "slice", "range", "dtype"}
    | {"generic", "Number", "Integral", "Real", "DType", "Enum", "NoneType"}
)


# Attributes every tracer has: a value without one is a Python value.
ARRAY_ATTRIBUTES = frozenset({"dtype", "shape", "ndim", "aval"})


# One write of `self.<attr>` in a method of a class: the statement and its target, and the
# method's first parameter; None for a write of another form (`del`, a loop or `with` target).
_Write = tuple[ast.Assign | ast.AnnAssign | ast.AugAssign, ast.expr, str] | None


def _attribute_writes(cls: ast.ClassDef) -> dict[str, list[_Write]]:
    """Each attribute `cls`'s methods write on `self`, with its writes; one walk of the class,
    each node visited once: what a `del`, a `for`, a `with` or a `:=` holds anywhere (its
    targets, its body) is a write of another form."""
    writes: dict[str, list[_Write]] = {}
    for method in cls.body:
        if not isinstance(method, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        positional = [*method.args.posonlyargs, *method.args.args]
        if not positional:
            continue
        own = positional[0].arg
        work: list[ast.AST] = [method]
        within: list[ast.AST] = []  # the nodes inside a `del`, `for`, `with` or `:=`
        for stack, inside in ((work, False), (within, True)):
            push = stack.append
            while stack:
                node = stack.pop()
                kind = type(node)
                if isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
                    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                    for target in targets:
                        for attr in _written_attributes(target, own):
                            writes.setdefault(attr, []).append((node, target, own))
                elif inside and kind is ast.Attribute:  # (a tuple's are its elements')
                    for attr in _written_attributes(node, own):
                        writes.setdefault(attr, []).append(None)
                if not inside and kind in _WRITES_ANYWHERE:
                    within.append(node)
                    continue
                PUSHERS[kind](node, push)
    return writes


_WRITES_ANYWHERE = frozenset({ast.Delete, ast.For, ast.With, ast.NamedExpr})


def _assigned_instances(written: dict[str, list[_Write]], module: Module) -> dict[str, str | None]:
    """For each attribute a class' methods write on `self` (`written`: `_attribute_writes`),
    the class of the module that every assignment of it calls, when there is one (else None)."""
    made: dict[str, set[str | None]] = {}
    for attr, writes in written.items():
        for write in writes:
            made.setdefault(attr, set()).add(
                _made_class(write[0], write[1], module) if write else None
            )
    return {attr: classes.pop() if len(classes) == 1 else None for attr, classes in made.items()}


def _assigned_arrays(written: dict[str, list[_Write]], module: Module) -> frozenset[str]:
    """The attributes a class' methods write on `self` (`written`: `_attribute_writes`) only
    with jax arrays: each assignment a call of a staged array namespace (`jnp.int32(0)`), or
    an operation on one or on the attribute itself (`self.count + 1`, `self.count += 1`), one
    at least a call."""
    found: set[str] = set()
    for attr, writes in written.items():
        kinds: set[bool | None] = set()
        for write in writes:
            if write is None or not isinstance(write[1], ast.Attribute):
                kinds.add(None)
                continue
            node, target, own = write
            value = node.value
            if isinstance(node, ast.AugAssign):  # `self.count += 1`
                value = ast.BinOp(_read(target), node.op, node.value)
            kinds.add(_array_made(value, own, attr, module))
        if None not in kinds and True in kinds:
            found.add(attr)
    return frozenset(found)


def _read(target: ast.expr) -> ast.expr:
    """`target` read: the attribute an augmented assignment reads before it writes."""
    if isinstance(target, ast.Attribute):
        return ast.Attribute(target.value, target.attr, ast.Load())
    return target


def _array_made(value: ast.expr | None, own: str, attr: str, module: Module) -> bool | None:
    """Whether `value` is a call of a staged array namespace (True), an operation on one or on
    `own.attr` and Python literals (False: an array when the attribute is), or something
    else (None)."""
    if isinstance(value, ast.Call):
        name = qualified_name(value.func, module)
        return True if name.startswith(STAGED_ARRAY_NAMESPACES) else None
    if isinstance(value, ast.Attribute):
        same = isinstance(value.value, ast.Name) and value.value.id == own and value.attr == attr
        return False if same else None
    if isinstance(value, ast.Constant) and isinstance(value.value, int | float):
        return None
    if isinstance(value, ast.BinOp | ast.UnaryOp):
        parts = [value.left, value.right] if isinstance(value, ast.BinOp) else [value.operand]
        found = [_array_made(part, own, attr, module) for part in parts]
        literals = all(
            f is not None or (isinstance(p, ast.Constant) and isinstance(p.value, int | float))
            for f, p in zip(found, parts, strict=True)
        )
        if not literals or not any(f is not None for f in found):
            return None
        return True in found
    return None


def _written_attributes(node: ast.AST, own: str) -> list[str]:
    """The attributes of `own` that `node` writes (a target, at any depth of a tuple one)."""
    if isinstance(node, ast.Tuple | ast.List | ast.Starred):
        parts = node.elts if isinstance(node, ast.Tuple | ast.List) else [node.value]
        return [attr for part in parts for attr in _written_attributes(part, own)]
    if (
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == own
        and not isinstance(node.ctx, ast.Load)
    ):
        return [node.attr]
    return []


def _made_class(
    node: ast.Assign | ast.AnnAssign | ast.AugAssign, target: ast.expr, module: Module
) -> str | None:
    """The module's class `node` (assigning `target`) calls to make its value; None for
    another value, or for a target in a tuple."""
    value = node.value if not isinstance(node, ast.AugAssign) else None
    if isinstance(target, ast.Tuple | ast.List) or not isinstance(value, ast.Call):
        return None
    func = value.func
    if isinstance(func, ast.Name) and func.id in module.classes and func.id not in module.imports:
        return func.id
    return None
