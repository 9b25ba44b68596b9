"""The abstract evaluation of expressions, for the interpreter of function bodies
(`jaxfix.analysis.interpreter`): each expression gives a `Value`; a call is evaluated by
`jaxfix.analysis.calls`."""

from __future__ import annotations

import ast
import builtins

from jaxfix.analysis import values as v
from jaxfix.analysis.calls import (
    ARRAY_ATTRIBUTES,
    CallEvaluator,
    sorted_strings,
)
from jaxfix.analysis.declarations import (
    methods_by_type,
)
from jaxfix.analysis.names import dotted
from jaxfix.analysis.narrowing import narrowed
from jaxfix.analysis.reach import REACH, conversion_raised_on, none_tested, reach_unless
from jaxfix.analysis.summaries import (
    TRACER_TEST,
    Call,
    Env,
    FunctionNode,
)
from jaxfix.analysis.values import (
    HOST,
    HOST_ARRAY,
    INSTANCE,
    JAX_OBJECT,
    STATIC,
    UNKNOWN,
    Guard,
    Kind,
    NotNone,
    Staged,
    Value,
    class_named,
    instance_class,
)
from jaxfix.models.host_solvers import SOLVERS
from jaxfix.models.jax_objects import ARRAY_VALUED_ATTRIBUTES, OBJECT_ATTRIBUTES
from jaxfix.models.transforms import (
    CALL_WRAPPERS,
    HOST_CALLBACKS,
    PARTIAL,
    STATIC_ATTRIBUTES,
)

_BUILTINS = frozenset(dir(builtins))
# Callables that run the functions they are given on the host, or bind them (no data flows).
# A solver runs the function it is given on the host, on NumPy values (`host_solvers`).
_NOT_APPLYING = HOST_CALLBACKS | {PARTIAL} | CALL_WRAPPERS | frozenset(SOLVERS)


class Evaluator(CallEvaluator):
    """The expressions of one function body."""

    def _defaults(self, node: FunctionNode, env: Env) -> None:
        """Defaults are evaluated where the function is defined (a lambda there is analysed)."""
        for default in [*node.args.defaults, *node.args.kw_defaults]:
            if default is not None:
                self.expr(default, env)

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
        subject, concrete_when, tracer_otherwise, narrowed_to = self._tested(test, env)
        if subject is None:
            return None
        return Guard(subject, concrete_when, tracer_otherwise, env.get(subject), narrowed_to)

    def _narrowed(self, types: ast.expr, subject: Value, env: Env) -> Value | None:
        """What `subject` holds as an instance of `types` (see `narrowing.narrowed`)."""
        return narrowed(types, subject, self.module, lambda name: self.name(name, env))

    def given_none(self, env: Env, names: set[str]) -> Env:
        """`env` where the parameters `names` (not rebound) hold None: not reached where they
        are given a value that is not None."""
        fid = self.summary.id
        facts = [
            NotNone(fid, n) for n in names if n in self.initial and env.get(n) == self.initial[n]
        ]
        if not facts:
            return env
        self.summary.none_tested = True
        inner = dict(env)
        reach_unless(inner, facts)
        return inner

    def _tested(self, test: ast.expr, env: Env) -> tuple[str | None, bool, bool, Value | None]:
        """The name a single test asks about and what it tells (see `Guard`)."""
        nothing = (None, False, False, None)
        typed = _type_of(test.left) if isinstance(test, ast.Compare) else None
        if isinstance(test, ast.Compare) and typed is not None and len(test.ops) == 1:
            op = test.ops[0]
            if isinstance(op, ast.In):
                return typed, True, False, None  # `type(x) in python_scalar_types`
            if isinstance(op, ast.Is | ast.Eq | ast.IsNot | ast.NotEq):  # `type(x) is C`
                instance = self._narrowed(test.comparators[0], self.name(typed, env), env)
                holds = isinstance(op, ast.Is | ast.Eq)
                return nothing if instance is None else (typed, holds, False, instance)
            return nothing
        if not isinstance(test, ast.Call) or not test.args:
            return nothing
        subject = test.args[0]
        parts = dotted(test.func)
        if not isinstance(subject, ast.Name) or parts is None:
            return nothing
        callee = ".".join(parts)
        if callee.endswith("isinstance") and len(test.args) == 2:
            if TRACER_TEST.search(ast.unparse(test.args[1])):
                return subject.id, False, True, None
            instance = self._narrowed(test.args[1], self.name(subject.id, env), env)
            return nothing if instance is None else (subject.id, True, False, instance)
        if callee in ("hasattr", "getattr") and _asks_array_attribute(test):
            return subject.id, False, False, None  # every tracer has a `dtype`
        if TRACER_TEST.search(callee):
            concrete = "concrete" in callee.lower() or callee.lower().split(".")[-1].startswith(
                "not"
            )
            return subject.id, concrete, True, None
        return nothing

    # -- expressions -----------------------------------------------------------------------

    def expr(self, node: ast.expr, env: Env) -> Value:
        reach = env.get(REACH)  # before: what a call raises on holds after it, not at it
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
        # `note_reach`, inline: asked of every expression (half a million on the benchmark's
        # corpus), and most often with nothing to note.
        conditions = self.module.conditions
        if reach is not None and reach.sources:
            conditions[node] = (self.summary.id, reach.sources)
        elif conditions:
            conditions.pop(node, None)
        return value

    def note_reach(self, node: ast.AST, reach: Value | None) -> None:
        """Note the facts under which `node` is not reached (see `jaxfix.analysis.reach`);
        a loop's later round may find fewer."""
        conditions = self.module.conditions
        if reach is not None and reach.sources:
            conditions[node] = (self.summary.id, reach.sources)
        elif conditions:
            conditions.pop(node, None)

    def name(self, name: str, env: Env) -> Value:
        if name in env:
            return env[name]
        if name in self.locals and not self.is_module:
            return UNKNOWN  # unbound here; at module level, a builtin until the module binds it
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
        return self._operation([self.expr(node.left, env), self.expr(node.right, env)])

    def e_UnaryOp(self, node: ast.UnaryOp, env: Env) -> Value:
        return self._operation([self.expr(node.operand, env)])

    def _operation(self, operands: list[Value]) -> Value:
        """An operation on `operands`. On a jax array made outside this function (a module's
        `W = jnp.ones(3)`, a `self.count` its class makes with `jnp.int32(0)`), it gives a
        tracer when the function is staged: under `jit` jax stages every operation on an
        array, a constant one too."""
        value = v.combine(operands)
        if self.compile_time or self.is_module or not any(map(_made_outside, operands)):
            return value
        return v.traced(value.sources | {Staged(self.summary.id)})

    def e_JoinedStr(self, node: ast.JoinedStr, env: Env) -> Value:
        for part in node.values:
            if isinstance(part, ast.FormattedValue):
                self.expr(part.value, env)
        return STATIC

    def e_Attribute(self, node: ast.Attribute, env: Env) -> Value:
        base = self.expr(node.value, env)
        if base == JAX_OBJECT:
            return UNKNOWN if node.attr in ARRAY_VALUED_ATTRIBUTES else JAX_OBJECT
        if (class_name := instance_class(base)) is not None:
            method = self._method(class_name, node.attr)
            if method is not None:
                # The receiver's sources ride along: `self` is traced when the instance is.
                return Value(Kind.UNKNOWN, base.sources, function=method, qualified="<bound>")
            held = self._attribute_instance(class_name, node.attr)
            if held is not None and base.field(node.attr) is None:
                # `self.logger`, made `MetricsLogger()` by the class's methods.
                kind = Kind.TRACED if base.kind is Kind.TRACED else Kind.UNKNOWN
                return Value(kind, base.sources, qualified=INSTANCE + held)
        elif base.qualified is not None and not base.qualified.startswith("<"):
            return Value(base.kind, qualified=f"{base.qualified}.{node.attr}")
        if node.attr in STATIC_ATTRIBUTES or node.attr in self.module.static_fields:
            return STATIC
        if node.attr in OBJECT_ATTRIBUTES:
            return JAX_OBJECT  # only a jaxpr and its equations have them (`jaxpr.eqns`)
        given = base.field(node.attr)
        if given is not None:
            return given
        of_class = instance_class(base)
        if of_class is not None:
            self.module.static_queries.add(f"{of_class} {node.attr}")
            if node.attr in self.module.static_classes.get(of_class, ()):
                return STATIC  # a metadata field of a class another module of the run declares
        if base.kind is Kind.TRACED and of_class is None:
            return base
        if of_class is not None and self._array_attribute(of_class, node.attr):
            return v.traced(base.sources | {HOST_ARRAY})  # `self.count = jnp.int32(0)`
        if base.sources and of_class is not None:
            return v.traced(base.sources)  # a field of an instance narrowed from a traced value
        return HOST if base.kind is Kind.HOST else (STATIC if base.kind is Kind.STATIC else UNKNOWN)

    def e_Subscript(self, node: ast.Subscript, env: Env) -> Value:
        base = self.expr(node.value, env)
        key = self.expr(node.slice, env)
        if base == JAX_OBJECT:
            return base  # `eqn.invars[0]`, `eqn.params["jaxpr"]`
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
        values = self._operands(node, env)
        for operand, value in zip(node.values[:-1], values[:-1], strict=True):
            self._bool(operand, value)
        return v.combine(values) if all(x.kind is Kind.STATIC for x in values) else UNKNOWN

    def _operands(self, node: ast.BoolOp, env: Env) -> list[Value]:
        """The operands' values, each evaluated where the ones before it let it run:
        `isinstance(v, C) and v in seen` tests `v` as an instance of `C`."""
        holds = isinstance(node.op, ast.And)
        values: list[Value] = []
        narrowed: dict[str, Value] = {}
        reach: Value | None = None
        for operand in node.values:
            inner = {**env, **narrowed} if narrowed else env
            values.append(self.expr(operand, inner))
            if inner is not env:  # what a `:=` bound meanwhile
                env.update((k, x) for k, x in inner.items() if k not in narrowed)
            if operand is node.values[0]:
                reach = env.get(REACH)  # the others may not run: what they raise on is moot
            if operand is node.values[-1]:
                break
            guard = self._tracer_guard(operand, inner)
            if guard is not None and guard.concrete_when is holds:
                narrowed[guard.name] = guard.narrowed_value()
        _restore_reach(env, reach)
        return values

    def e_IfExp(self, node: ast.IfExp, env: Env) -> Value:
        self._bool(node.test, self.expr(node.test, env))
        guard = self._tracer_guard(node.test, env)
        when_none, otherwise_none = none_tested(node.test)
        body, orelse = self.given_none(env, when_none), self.given_none(env, otherwise_none)
        if guard is not None:
            concrete = {**env, guard.name: guard.narrowed_value()}
            reach_unless(concrete, guard.unreached_if())
            body, orelse = (concrete, env) if guard.concrete_when else (env, concrete)
        reach = env.get(REACH)  # either branch may not run: what it raises on is moot
        first = self.expr(node.body, body)
        _restore_reach(env, reach)
        second = self.expr(node.orelse, orelse)
        _restore_reach(env, reach)
        return v.join(first, second)

    def e_Compare(self, node: ast.Compare, env: Env) -> Value:
        values = [self.expr(node.left, env), *(self.expr(c, env) for c in node.comparators)]
        if any(isinstance(op, ast.Is | ast.IsNot | ast.In | ast.NotIn) for op in node.ops):
            return STATIC if all(x.kind is not Kind.TRACED for x in values) else UNKNOWN
        return self._operation(values)

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
                guard = self._tracer_guard(test, inner)  # `if isinstance(x, C)`: narrows `x`
                if guard is not None and guard.concrete_when:
                    inner[guard.name] = guard.narrowed_value()
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
        return value if sorted_strings(keys) else value._replace(reorders=True)

    def e_Call(self, node: ast.Call, env: Env) -> Value:
        func = self.expr(node.func, env)
        receiver: Value | None = None
        method: str | None = None
        if isinstance(node.func, ast.Attribute):
            receiver = self.summary.values.get(node.func.value, UNKNOWN)
            if func.qualified is None and func.function is None:
                method = node.func.attr
        target, bound = func.function, func.bound_positions + (func.qualified == "<bound>")
        instance_of = instance_class(func)
        if func.function is None and instance_of is not None:
            # Calling an instance runs its class's `__call__`, with the instance as `self`.
            target = self._method(instance_of, "__call__")
            receiver, bound = func, 1
        elif func.function is None and (made := class_named(func)) is not None:
            # Calling the class runs its `__init__` on the new instance.
            target = self._method(made, "__init__")
            receiver, bound = Value(Kind.UNKNOWN, qualified=INSTANCE + made), 1
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
        if self.guarded:  # a conversion a `try:` catches the error of: what follows needs it
            reach_unless(env, conversion_raised_on(call))
        return self._result(call, func, env)

    def _bool(self, node: ast.expr, value: Value) -> None:
        """A traced value used as a condition: recorded as a call of `builtins.bool`."""
        if value.kind is Kind.TRACED:
            fake = ast.Call(func=ast.Name("bool"), args=[node], keywords=[])
            ast.copy_location(fake, node)
            held = self.module.conditions.get(node)
            if held is not None:
                self.module.conditions[fake] = held
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


_EXPRESSIONS = methods_by_type(Evaluator, "e_")


def _made_outside(value: Value) -> bool:
    """`value` is a jax array, or a tracer, made by a jax function of other code than the
    function reading it (an enclosing function's, the module's, a class's `__init__`)."""
    return (
        value.kind is Kind.TRACED
        and not value.parts()
        and any(isinstance(s, Staged) for s in value.sources)
    )


def _type_of(node: ast.expr) -> str | None:
    """The name `x` of `type(x)`."""
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "type"
        and len(node.args) == 1
        and isinstance(node.args[0], ast.Name)
    ):
        return node.args[0].id
    return None


def _restore_reach(env: Env, reach: Value | None) -> None:
    """Put back the path condition `env` held (code that may not have run raised nothing)."""
    if reach is None:
        env.pop(REACH, None)
    else:
        env[REACH] = reach


def _asks_array_attribute(test: ast.Call) -> bool:
    """`hasattr(x, "dtype")`, or `getattr(x, "dtype", None)` (falsy without the attribute)."""
    args = test.args
    if len(args) < 2 or not isinstance(args[1], ast.Constant):
        return False
    if args[1].value not in ARRAY_ATTRIBUTES:
        return False
    if len(args) == 2:
        return isinstance(test.func, ast.Name) and test.func.id == "hasattr"
    default = args[2]
    return len(args) == 3 and isinstance(default, ast.Constant) and not default.value
