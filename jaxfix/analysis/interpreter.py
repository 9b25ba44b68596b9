"""The abstract interpreter of one function body, in statement order (`jaxfix.analysis.flow`
says how): statements, bindings and narrowing, expressions and calls, each giving a `Value`."""

from __future__ import annotations

import ast
import contextlib
import re
from collections.abc import Iterator
from dataclasses import dataclass, field

from jaxfix.analysis import values as v
from jaxfix.analysis.declarations import (
    ELEMENTS,
    SEQUENCE,
    methods_by_type,
)
from jaxfix.analysis.expressions import Evaluator
from jaxfix.analysis.names import dotted
from jaxfix.analysis.pytree_fields import METADATA_ONLY, metadata_only_classes
from jaxfix.analysis.reach import REACH, forget, none_tested, own, reach_unless, unless
from jaxfix.analysis.reasons import Reason, Via
from jaxfix.analysis.summaries import (
    TRACER_TEST,
    Entry,
    Env,
    FunctionNode,
    Store,
    outliving_params,
    parameter_value,
    params_of,
    qualified_name,
    static_method,
)
from jaxfix.analysis.transform_arguments import (
    is_constant,
    python_valued_params,
)
from jaxfix.analysis.values import (
    CLASS,
    INSTANCE,
    STATIC,
    UNKNOWN,
    Kind,
    Param,
    Source,
    Staged,
    Value,
)
from jaxfix.models.transforms import (
    TRACED_MODULE_BASES,
)

MAX_LOOP_ROUNDS = 8
# Exceptions whose handler means the `try:` body expects tracers to fail there.
_CONCRETIZATION_ERRORS = re.compile(r"Concretization|Tracer\w*Error|TypeError|Exception")
COMPILE_TIME_EVAL = "jax.ensure_compile_time_eval"


class _Exit(Exception):
    """Not an error: the branch returned, raised, broke out or went on to the next round
    (nothing after it runs)."""


@dataclass
class _LoopExits:
    """Where the paths of one round of a loop's body that leave it early went: `break`s to
    after the loop (skipping its `else`), `continue`s back to its head."""

    breaks: list[Env] = field(default_factory=list)
    continues: list[Env] = field(default_factory=list)


class Interpreter(Evaluator):
    """Interprets one function body; nested functions get interpreters of their own."""

    # The loops around the statement interpreted, innermost last (`break`, `continue`).
    loop_exits: list[_LoopExits]

    # -- running ---------------------------------------------------------------------------

    def run(self) -> Env:
        env: Env = {p: parameter_value(Param(self.summary.id, p)) for p in self.summary.params}
        for name, class_name in self._instance_params().items():
            if class_name == SEQUENCE:  # a list or tuple: iterating gives its elements
                env[name] = env[name]._replace(element=env[name])
                continue
            held = class_name.removesuffix(ELEMENTS)
            # An instance of a class whose every field is metadata holds no tracer.
            leafless = self._metadata_only(held)
            sources = frozenset() if leafless else frozenset({Param(self.summary.id, name)})
            kind = Kind.STATIC if leafless else Kind.TRACED
            instance = Value(kind, sources, qualified=INSTANCE + held)
            # A sequence of instances (`[Var(...)]`) gives one when iterated.
            env[name] = instance if held == class_name else Value(kind, sources, element=instance)
        self.loop_exits = []
        self.initial = dict(env)
        node = self.summary.node
        running = self.module.running
        running.add(self.summary.id)
        try:
            if isinstance(node, ast.Lambda):
                self.summary.returns = self.expr(node.body, env)
                self._exit(env)
                return env
            try:
                self.block(self.body, env)
            except _Exit:
                pass
            else:
                self._exit(env)
            return env
        finally:
            running.discard(self.summary.id)
            self.summary.raises_if = self._raises_if()

    def _exit(self, env: Env) -> None:
        """A way out of the function other than a raise: the facts under which it is not
        reached are some under which the function raises."""
        found = unless(env)
        self.exits = found if self.exits is None else self.exits & found

    def _raises_if(self) -> frozenset[Source]:
        """The facts about the function itself under which it certainly raises, when called
        (a generator or a coroutine runs nothing then): see `Summary.raises_if`."""
        node = self.summary.node
        found = own(self.exits or (), self.summary.id)
        found = frozenset(f for f in found if isinstance(f, Param | Staged))
        if not found or not isinstance(node, ast.FunctionDef | ast.Lambda):
            return frozenset()
        return frozenset() if _generator(node) else found

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
            elif (imported := self._static_class(annotation)) is not None:
                found[param.arg] = imported
        return found

    def _metadata_only(self, class_name: str) -> bool:
        """Whether every field of the class (of the module, or as imported from another
        module of the run) is metadata."""
        self.module.static_queries.add(f"{class_name} {METADATA_ONLY}")
        if METADATA_ONLY in self.module.static_classes.get(class_name, ()):
            return True
        return class_name in metadata_only_classes(self.module)

    def _static_class(self, annotation: ast.expr | None) -> str | None:
        """The class of another module of the run with metadata fields that `annotation`
        names (`System`, `base.System`, `System | None`, `Optional[System]`), as imported. The
        name is looked up (`Module.static_queries`) whether the run has such classes or not."""
        if annotation is None:
            return None
        if isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):
            if is_constant(annotation.right, None):
                return self._static_class(annotation.left)
            if is_constant(annotation.left, None):
                return self._static_class(annotation.right)
            return None
        if isinstance(annotation, ast.Subscript) and qualified_name(
            annotation.value, self.module
        ) in ("typing.Optional", "Optional"):
            return self._static_class(annotation.slice)
        name = qualified_name(annotation, self.module)
        self.module.static_queries.add(name)
        return name if name in self.module.static_classes else None

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
        self.returns += 1
        self._exit(env)
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
        value = self._operation([self._load_target(node.target, env), self.expr(node.value, env)])
        self.summary.values[node] = value  # what it stores (`keeping` asks)
        self.note_reach(node, env.get(REACH))
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
                if traced_base is not None and not static_method(statement, "classmethod"):
                    self._module_method(statement, traced_base)
        env[node.name] = Value(Kind.STATIC, qualified=CLASS + node.name)

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
            Interpreter(self.module, self.transforms, fid, node, self, class_name, closure).run()

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
                isinstance(n, ast.Call) and TRACER_TEST.search(".".join(dotted(n.func) or ()))
                for n in ast.walk(node.test)
            )
        )
        if guard is None or (asks and longer):
            # A test that asks about tracers in a way not narrowed here (`not_jax_tracer(a)
            # and not_jax_tracer(b)`): both branches know what they hold.
            self._bool(node.test, test)
            when_none, otherwise_none = none_tested(node.test)
            self.guarded += asks
            try:
                self._join_into(
                    env,
                    self.branch(node.body, self.given_none(env, when_none)),
                    self.branch(node.orelse, self.given_none(env, otherwise_none)),
                )
            finally:
                self.guarded -= asks
            return
        name = guard.name
        concrete = dict(env)
        narrowed = guard.narrowed_value()
        concrete[name] = narrowed
        added = guard.unreached_if() - unless(env)
        reach_unless(concrete, added)  # reached only when it holds no tracer
        concrete_body = guard.concrete_when
        guards = int(guard.tracer_otherwise)
        self.guarded += guards
        returns = self.returns
        try:
            tracer_side = self.branch(node.orelse if concrete_body else node.body, env)
        finally:
            self.guarded -= guards
        concrete_side = self.branch(node.body if concrete_body else node.orelse, concrete)
        if tracer_side is None and self.returns != returns and concrete_side is not None:
            # Only a raise says that what follows is not for tracers; a tracer that returns
            # early takes the function's other way, and what follows stays checked.
            forget(concrete_side, added)
        original = env.get(name)
        if (
            tracer_side is not None
            and concrete_side is not None
            and original is not None
            and concrete_side.get(name) == narrowed  # narrowed only: both paths go on with it
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

    def _loop(self, node: ast.For | ast.AsyncFor | ast.While, env: Env) -> None:
        """Round after round until the state at the loop's head settles (a name rebound from
        another that the previous round rebound takes a second round); after the loop, what
        holds where its test fails (or its iterable ends: also before any round) and at each
        `break`. A `while True:` is left by its `break`s alone."""
        state = dict(env)
        exits = _LoopExits()
        for _ in range(MAX_LOOP_ROUNDS):
            inner = dict(state)
            if isinstance(node, ast.For | ast.AsyncFor):
                self.bind(node.target, self._element(self.expr(node.iter, inner)), inner, node)
            else:
                self._bool(node.test, self.expr(node.test, inner))
            exits = _LoopExits()
            self.loop_exits.append(exits)
            try:
                after = self.branch(node.body, inner)
            finally:
                self.loop_exits.pop()
            ends = [side for side in (after, *exits.continues) if side is not None]
            if not ends:
                break
            merged = dict(state)
            self._join_into(merged, state, *ends)
            if merged == state:
                break
            state = merged
        endless = isinstance(node, ast.While) and _always_true(node.test)
        normal = None if endless else self.branch(node.orelse, state)
        self._join_into(env, normal, *exits.breaks)

    def s_Break(self, node: ast.Break, env: Env) -> None:
        if self.loop_exits:
            self.loop_exits[-1].breaks.append(dict(env))
        raise _Exit

    def s_Continue(self, node: ast.Continue, env: Env) -> None:
        if self.loop_exits:
            self.loop_exits[-1].continues.append(dict(env))
        raise _Exit

    s_For = s_AsyncFor = s_While = _loop

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
        managers: set[str | None] = set()
        for item in node.items:
            value = self.expr(item.context_expr, env)
            if isinstance(item.context_expr, ast.Call):
                managers.add(self._callee_name(item.context_expr.func, env))
            if item.optional_vars is not None:
                self.bind(
                    item.optional_vars, UNKNOWN if value.kind is Kind.TRACED else value, env, node
                )
        compile_time = int(COMPILE_TIME_EVAL in managers)
        self.compile_time += compile_time
        try:
            if managers & _SWALLOWING:
                # The body may stop anywhere, and the code after the block goes on.
                self._join_into(env, dict(env), self.branch(node.body, env))
            else:
                self.block(node.body, env)
        finally:
            self.compile_time -= compile_time

    s_AsyncWith = s_With

    def s_Match(self, node: ast.Match, env: Env) -> None:
        """Each arm on its own, its subject narrowed by a class pattern; the code after the
        block also runs when no arm matched, unless the last arm matches anything (`case _:`,
        `case name:` without a guard)."""
        subject = self.expr(node.subject, env)
        sides = []
        for case in node.cases:
            narrowed, names = self._case_narrowing(node.subject, case.pattern, subject, env)
            inner = {**env, **dict.fromkeys(names, narrowed)} if narrowed is not None else env
            side = self.branch(case.body, inner)
            for name in names:  # narrowed only: after the `match` it holds the subject
                if side is not None and name in env and side.get(name) == narrowed:
                    side[name] = subject
            sides.append(side)
        exhaustive = bool(node.cases) and _irrefutable(node.cases[-1])
        self._join_into(env, None if exhaustive else env, *sides)

    def _case_narrowing(
        self, subject_node: ast.expr, pattern: ast.pattern, subject: Value, env: Env
    ) -> tuple[Value | None, list[str]]:
        """What a `case C():` (`case C() as c`, `case A() | B()`) tells of the subject: its
        value as an instance of the classes, and the names that hold it in the case (the
        subject's name, the `as` name); None when a class may be an array type."""
        names = [subject_node.id] if isinstance(subject_node, ast.Name) else []
        if isinstance(pattern, ast.MatchAs) and pattern.pattern is not None:
            names += [pattern.name] if pattern.name else []
            pattern = pattern.pattern
        alternatives = pattern.patterns if isinstance(pattern, ast.MatchOr) else [pattern]
        if not all(isinstance(p, ast.MatchClass) for p in alternatives):
            return None, []
        classes = ast.Tuple([p.cls for p in alternatives if isinstance(p, ast.MatchClass)])
        return self._narrowed(classes, subject, env), names

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
                self._store(statement, target.id, value, True, env)
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
                else:  # one of its elements, as iterating it gives (`h, w = x.shape`: static)
                    self.bind(element, self._element(value), env, statement)
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
                self._store(statement, root.id, value, outlives, env)

    def _self_class(self) -> str | None:
        """The class whose instance the first parameter holds: None for a function, a static
        or class method, or a method without parameters."""
        if not self.summary.positional or static_method(self.summary.node, "classmethod"):
            return None
        return self.summary.class_name

    def _store(self, node: ast.stmt, root: str, value: Value, outlives: bool, env: Env) -> None:
        self.note_reach(node, env.get(REACH))
        self.summary.stores.append(
            Store(node, self.summary.id, root, value, outlives, bool(self.guarded))
        )


_STATEMENTS = methods_by_type(Interpreter, "s_")
# Context managers that may swallow the exception that stops their block.
_SWALLOWING = frozenset({"contextlib.suppress"})


def _always_true(test: ast.expr) -> bool:
    """`while True:`, `while 1:`: a loop its test never ends."""
    return isinstance(test, ast.Constant) and bool(test.value)


def _irrefutable(case: ast.match_case) -> bool:
    """A `match` arm that matches every subject: a wildcard or a bare capture, unguarded."""
    pattern = case.pattern
    while isinstance(pattern, ast.MatchAs) and pattern.pattern is not None:
        pattern = pattern.pattern
    return case.guard is None and isinstance(pattern, ast.MatchAs) and pattern.pattern is None


def _generator(node: ast.FunctionDef | ast.Lambda) -> bool:
    """Whether the function's own body yields (calling it runs nothing yet)."""
    pending: list[ast.AST] = [node.body] if isinstance(node, ast.Lambda) else list(node.body)
    while pending:
        current = pending.pop()
        if isinstance(current, ast.Yield | ast.YieldFrom):
            return True
        if not isinstance(
            current, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef
        ):
            pending.extend(ast.iter_child_nodes(current))
    return False
