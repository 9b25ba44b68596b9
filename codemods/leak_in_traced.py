"""JF103 leak-in-traced: a traced value kept in state that outlives the trace, or logged."""

from __future__ import annotations

import libcst as cst

from jaxfix.analysis.candidates import OUTER, STORES
from jaxfix.analysis.keeping import MUTATORS, Holder, Outliving
from jaxfix.fixes.after_call_sites import rewrite_imported_sites
from jaxfix.fixes.fix import Fix
from jaxfix.fixes.hoist import is_host_only_target
from jaxfix.fixes.host_effects import Hoists, wait_in_importers
from jaxfix.fixes.restore import Restore, plan_restore
from jaxfix.fixes.syntax import FunctionNode, source_of
from jaxfix.fixes.tracing import TracedAnalysis
from jaxfix.models.diagnostic import FixSafety
from jaxfix.models.loggers import LEVELS, LOGGER_METHODS, METRICS_METHODS
from jaxfix.models.sinks import EVERY, SinkKind, names_of, rows
from jaxfix.rules.rule import Rule, command_hooks

# Module-level logging functions (every argument is logged), and the makers of loggers whose
# level methods (`LOGGER_METHODS`) log.
SINKS = (
    *rows(
        SinkKind.LOG,
        [
            *(f"{module}.{level}" for module in ("logging", "absl.logging") for level in LEVELS),
            "wandb.log",
            "wandb.run.log",
            "mlflow.log_metric",
            "mlflow.log_metrics",
        ],
        EVERY,
    ),
    *rows(SinkKind.LOGGER, ["logging.getLogger", "wandb.init"]),
)
# The mutators whose value code uses; every other one returns None, so a call whose value is
# used is another object's method of that name (`state = opt.update(grads, state)`).
VALUED_MUTATORS = frozenset({"setdefault"})
# Why a kept closure has no fix: a callback would keep a closure too, over host copies taken
# once per call (once per element under `vmap`), where the code meant to keep one.
CLOSURE_HINT = "the code that calls it later needs the values: return them from the function"
Statement = cst.SimpleStatementLine
_TARGETS = (cst.Attribute, cst.Subscript)


class LeakInTraced(Rule):
    """
    ## What it does
    Finds traced code (`jit`, `grad`, `vmap`, `lax.scan` and loop bodies, the functions they
    call) that keeps a traced value in state that outlives the trace: appends it to a
    module-level list, a closure's list, a mutable default or `self.history`, puts it on a
    `queue.Queue` or `deque`, stores it in a `global` / `nonlocal` name, a module-level dict,
    a dict the class keeps in `self.cache`, or an attribute of `self` or of an outer object;
    and traced values passed to a logger (`logging.info`, `logging.getLogger(...)` loggers,
    also kept in `self.log` by the class, `wandb.log`, `writer.add_scalar`, `log_metrics`).
    An unpacking stores each part (`global KEY; KEY, sub = jax.random.split(KEY)`), and under
    `jax.jit` an array made from constants is a tracer too (it is staged). A function that
    closes over a tracer (a lambda or a `def` of the traced function reading one of its
    tracers) keeps it too, also when it is handed to a function of the module that stores its
    parameter (`checks.setdefault(name, []).append(check)`): calling it after the trace
    fails. Such a store has no fix.
    A list or dict the traced function creates itself is not reported, nor are Flax NNX, Flax
    linen, Equinox and Haiku modules' own attributes. A conversion that raises on a tracer
    (`HISTORY.append(float(loss))`, `.item()`) stores nothing: it is JF104's.

    ## Why is this bad?
    Inside the trace an array is a `Tracer`, an abstract value without data, valid only while
    jax traces the function. Nothing fails where it is stored: the failure comes later, when
    the host uses what it kept. A jnp operation on it raises `UnexpectedTracerError`, `float()`
    or pickling raises `ConcretizationTypeError`, and `print` shows `JitTracer(float32[])`
    instead of numbers. The statement also runs only once per trace, not once per call. A
    logger formats a tracer (its `%f` fails inside the handler, `float(loss)` raises
    `ConcretizationTypeError` at once) instead of the value.

    ## Example
    ```python
    HISTORY = []


    @jax.jit
    def step(w, x):
        loss = jnp.mean((w * x) ** 2)
        HISTORY.append(loss)
        logger.info("loss %f", float(loss))
        return w - 0.1 * loss


    w = step(w, x)
    print(HISTORY[-1])
    ```

    ## Use instead
    ```python
    HISTORY = []


    @jax.jit
    def step(w, x):
        loss = jnp.mean((w * x) ** 2)

        def _host_append(loss):
            HISTORY.append(loss)

        jax.debug.callback(_host_append, loss, ordered=True)

        def _host_info(loss):
            logger.info("loss %f", float(loss))

        jax.debug.callback(_host_info, loss, ordered=True)
        return w - 0.1 * loss


    w = step(w, x)
    jax.effects_barrier()
    print(HISTORY[-1])
    ```
    When the traced code reads the stored value back (`global SCALE; SCALE = m; return x /
    SCALE`), the store stays and the function returns the stored state too, which each call
    stores again: `return x / SCALE, SCALE` and `y, SCALE = _normalize(x)`.

    ## Fix safety
    Unsafe. When every call site of the function is in view (it is private, or the module is
    a script: see JF107) and jitted by its decorator, differentiated where it is used
    (`g = jax.grad(f)(x)`, `v, g = jax.value_and_grad(f)(x)`) or scanned on the host
    (`c, ys = lax.scan(f, c0, xs)`), the statement moves *after* each call: the function
    returns the traced values it needs as extra outputs (under `jax.grad`, as its auxiliary
    output: `has_aux=True`; from a scan body, stacked beside `y`, and the statement runs once
    per iteration over them), and each call site (`out = f(x)` or `f(x)` alone on its line)
    unpacks them and runs it on their host copies (`jax.device_get`, which waits for them:
    the same on every backend, with no callback).
    A caller jaxfix did not see would get a tuple. Otherwise:

    the statement moves into a host callback that runs when the compiled function
    *executes*, with concrete arrays, not when it is traced: once per call (not once per
    compilation), once per element under `vmap` and once per iteration under `lax.scan`.
    `ordered=True` keeps the effects in program order, but transformations such as
    rematerialisation may repeat them. Values reach the host asynchronously (on a GPU or TPU
    after the call has returned): where host code in the file reads the stored state after code
    that may run the function, the fix also puts `jax.effects_barrier()` before that first read
    (its title says where), and later statements of the function that use the state move into
    the same callback. When a read cannot be made to wait (it shares its statement with the
    call), there is no fix.

    A store that the traced code reads back cannot move: its later reads need the traced
    value. When it runs whenever the function runs, into a `global` or `nonlocal` name, or
    an attribute or constant item of a module-level or enclosing object, and every use of
    the function is in view (a local function, or a private one) and is a call of it jitted
    by its decorator, or given at once to `jax.jit`, `jax.grad`, `jax.value_and_grad` or
    `jax.jvp` (with `has_aux=True`: the state is its auxiliary output), the function returns
    the stored state as an extra output and each call site stores it again (`y, SCALE =
    f(x)`): the host then holds the array the trace stored, not its tracer. Under `jax.jit` a
    call that reuses the compiled function returns the state computed from what its trace
    read. Otherwise (a public function, `vmap`, a method's `self`) there is no fix.

    ## References
    - https://docs.jax.dev/en/latest/errors.html#jax.errors.UnexpectedTracerError
    - https://docs.jax.dev/en/latest/external-callbacks.html
    """

    code = "JF103"
    name = "leak-in-traced"
    summary = "A traced value stored in state that outlives the trace, or logged"
    message = "`{what}` keeps a traced value in {where} inside `{function}` ({reason})"
    log_message = "`{what}` logs a traced value inside `{function}` ({reason})"
    closure_message = (
        "`{what}` keeps a closure over a traced value in {where} inside `{function}` ({reason})"
    )
    fix_title = (
        "Return the traced values and run the statement on them after each call, return the"
        " stored value and store it again after each call, or move the statement to a host"
        " callback (`jax.debug.callback`)"
    )
    hoist_title = "Move the statement to a host callback (`jax.debug.callback`)"
    fix_safety = FixSafety.UNSAFE
    unfixed = (
        "a read of the stored state that cannot wait for the callback (in the statement that "
        "makes the call)"
    )
    after_call_title = "Return the traced values and run the statement on them after each call"
    restore_title = "Return the stored value and store it again after each call"
    reads_users = True  # whether traced code reads the state back; the call sites
    project_aware = True  # other modules' calls of a function whose statements move after them
    reads_after_calls = True  # the fix waits for the callback where host code reads the state
    anchors = frozenset(
        {STORES, *LOGGER_METHODS, *METRICS_METHODS}
        | {OUTER + method for method in MUTATORS - VALUED_MUTATORS}
        | VALUED_MUTATORS
        | names_of(SINKS, SinkKind.LOG)
    )
    sinks = SINKS

    def prepare(self) -> None:
        """The logging functions and logger makers, and the fixes made so far."""
        self._hoists = Hoists(self, self._movable, _no_wrapping)
        self._logging_functions = self.sink_names(SinkKind.LOG)
        self._logger_makers = self.sink_names(SinkKind.LOGGER)

    # ----- what leaks -------------------------------------------------------------------------

    def leave_Module(self, original_node: cst.Module) -> None:
        rewrite_imported_sites(self)  # the call sites of other modules' functions
        wait_in_importers(self)  # the reads after them of what their callbacks write

    def visit_Call(self, node: cst.Call) -> None:
        if self.traced.context_of(node) is None:
            return
        if self._logged(node):
            self._found(node, None, self.log_message, "", "log", None)
            return
        func = node.func
        if not isinstance(func, cst.Attribute):
            return
        method = func.attr.value
        if (
            method not in VALUED_MUTATORS
            and not isinstance(self.traced.parent(node), cst.Expr)
            and not self.traced.mutates_in_lambda(node)
        ):
            return  # its value is used: not a mutator, which returns None
        found = self.traced.kept_call(node)
        if found is None or self.traced.is_undone(node):
            return
        hint = "tracers are unhashable" if method == "add" else None
        template = self.closure_message if found.closure else self.message
        hint = CLOSURE_HINT if found.closure else hint
        self._found(node, func.value, template, self._where(found, func.value), "keep", hint)

    def visit_Assign(self, node: cst.Assign) -> None:
        if len(node.targets) == 1:
            self._store(node, node.targets[0].target)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._store(node, node.target)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None:
            self._store(node, node.target)

    def _store(self, node: cst.BaseSmallStatement, target: cst.BaseExpression) -> None:
        if self.traced.context_of(node) is None:
            return
        found = self.traced.kept_store(node)
        if found is not None:
            target = _written(target, found.root)
            written = target.value if isinstance(target, cst.Subscript) else target
            where = self._where(found, written)
            template, hint = (
                (self.closure_message, CLOSURE_HINT) if found.closure else (self.message, None)
            )
            self._found(node, target, template, where, "keep", hint, found.holder)

    def _logged(self, call: cst.Call) -> bool:
        """`call` hands a traced value to a logger or a metrics writer."""
        func = call.func
        if self.qualified_names(func) & self._logging_functions:
            pass
        elif not isinstance(func, cst.Attribute) or self.qualified_names(func):
            return False
        elif func.attr.value in LOGGER_METHODS:
            if not self.traced.made_by(func.value, self._logger_makers):
                return False
        elif func.attr.value not in METRICS_METHODS or self._own_method(func):
            return False
        return any(self.traced.leaks(arg.value) for arg in call.args)

    # ----- where a value lives ----------------------------------------------------------------

    def _where(self, found: Outliving, expr: cst.BaseExpression) -> str:
        """Where the object `expr` lives, in words."""
        holder, root = found.holder, f"`{found.root}`"
        if holder in (Holder.GLOBAL, Holder.NONLOCAL):
            outer = f"`{holder.value}`"
            return (
                f"a {outer}"
                if isinstance(expr, cst.Name)
                else f"an attribute of the {outer} {root}"
            )
        if holder is Holder.MODULE:
            return f"module-level `{source_of(expr)}`"
        if holder is Holder.SELF:
            return f"an attribute of {root}"
        if holder is Holder.DEFAULT:
            return f"the default of parameter {root}"
        return f"`{source_of(expr)}` of the enclosing `{found.enclosing}`"

    def _own_method(self, func: cst.Attribute) -> bool:
        """`self.log_metrics(...)` calls a method the class defines (it is analysed itself)."""
        if not isinstance(func.value, cst.Name):
            return False
        owner = self.traced.owner_function(func)
        block = self.traced.parent(owner) if owner is not None else None
        cls = self.traced.parent(block) if block is not None else None
        return isinstance(cls, cst.ClassDef) and any(
            isinstance(s, cst.FunctionDef) and s.name.value == func.attr.value
            for s in cls.body.body
        )

    # ----- report and fix ---------------------------------------------------------------------

    def _found(
        self,
        node: cst.CSTNode,
        location: cst.BaseExpression | None,
        template: str,
        where: str,
        verb: str,
        hint: str | None,
        holder: Holder | None = None,
    ) -> None:
        """Report `node`, which keeps a traced value in `location` (or logs it: None, or
        stores it in a place that outlives the trace as `holder` says), with a fix when its
        statement can move to the host as it is, or when what it stores can be returned."""
        context = self.traced.context_of(node)
        assert context is not None
        what = (
            source_of(node.func)
            if isinstance(node, cst.Call)
            else f"{source_of(location or node)} = ..."
        )
        message = template.format(
            what=what, where=where, function=context.label, reason=context.reasons[0]
        )
        statement = None if hint or self._traced_root(location) else self._statement(node)
        fix = None
        if statement is not None and location is not None and self._read_back(location, statement):
            restored = plan_restore(self.traced, statement, location, holder) if holder else ""
            if restored is None:
                return  # the function returns what it stores, and each call stores it
            if isinstance(restored, Restore):
                fix = self.make_fix(restored.replacements, title=self.restore_title)
            hint = "it is read back inside the trace" + (f": {restored}" if restored else "")
            statement = None
        if statement is not None:
            planned = self._hoist(statement, node)
            fix, hint = (planned, hint) if isinstance(planned, Fix) else (None, planned or hint)
        if fix is None:
            message += f"; return the value and {verb} it after the call"
            message += f" ({hint})" if hint else ""
        self.report(node, message, fix)

    def _traced_root(self, location: cst.BaseExpression | None) -> bool:
        """The container (or object) written to is itself traced, as a jitted function's
        mutable default is to the analysis: the callback could not receive it."""
        if isinstance(location, cst.Name) and not self._receiver(location):
            return False  # `global g; g = y`: the name is rebound, not written through
        while isinstance(location, cst.Attribute | cst.Subscript):
            location = location.value
        return isinstance(location, cst.Name) and self.traced.is_traced(location)

    def _receiver(self, name: cst.Name) -> bool:
        parent = self.traced.parent(name)
        return isinstance(parent, cst.Attribute) and parent.value is name

    def _statement(self, node: cst.CSTNode) -> Statement | None:
        """The line holding `node`, when moving it to the host changes only host state."""
        current = self.traced.simple_statement(node)
        if current is None:
            return None
        body = current.body
        if len(body) == 1 and isinstance(body[0], cst.Expr) and body[0].value is not node:
            return None
        return current if self._movable(current) else None

    def _movable(self, statement: cst.CSTNode) -> bool:
        """A lone expression, or an assignment only the host sees, outside a `with`."""
        if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
            return False
        small = statement.body[0]
        if isinstance(small, cst.Assign):
            targets = [t.target for t in small.targets]
        elif isinstance(small, cst.AugAssign | cst.AnnAssign):
            targets = [small.target]
        elif isinstance(small, cst.Expr):
            targets = []
        else:
            return False
        host_only = all(is_host_only_target(self.traced, t) for t in targets)
        return host_only and not self._in_with(statement, self.traced.owner_function(statement))

    def _in_with(self, statement: cst.CSTNode, owner: FunctionNode | None) -> bool:
        node = self.traced.parent(statement)
        while node is not None and node is not owner:
            if isinstance(node, cst.With):
                return True
            node = self.traced.parent(node)
        return False

    def _read_back(self, location: cst.BaseExpression, statement: Statement) -> bool:
        """Whether traced code outside `statement` reads what it stores."""
        while (
            isinstance(location, cst.Call)
            and isinstance(location.func, cst.Attribute)
            and location.func.attr.value == "setdefault"
        ):
            location = location.func.value  # `HIST.setdefault("loss", [])`: an item of `HIST`
        if isinstance(location, cst.Subscript):
            location = location.value
        if isinstance(location, cst.Attribute):
            attribute = location.attr.value
            return any(
                self.traced.context_of(a) is not None and not _write_only(self.traced, a)
                for a in self.traced.attributes_named(attribute)
                if not self.traced.inside(a, statement)
            )
        if not isinstance(location, cst.Name):
            return True
        for assignment in self.traced.assignments(location):
            for access in assignment.references:
                read = access.node
                if (
                    isinstance(read, cst.Name)
                    and self.traced.context_of(read) is not None
                    and not self.traced.inside(read, statement)
                    and not _write_only(self.traced, read)
                ):
                    return True
        return False

    def _hoist(self, statement: Statement, node: cst.CSTNode) -> Fix | str:
        """The fix that moves `statement` to the host, or why there is none."""
        if isinstance(node, cst.Call):
            func = node.func
            method = func.attr.value if isinstance(func, cst.Attribute) else source_of(func)
            return self._hoists.fix(statement, "_host_" + method.replace(".", "_"))
        return self._hoists.fix(statement, "_host_store")


def _written(target: cst.BaseExpression, root: str) -> cst.BaseExpression:
    """The part of an unpacking target (`key, sub = ...`) that stores into `root`: the first
    whose name, or the base of whose attribute or item, it is; `target` itself otherwise."""
    if not isinstance(target, cst.Tuple | cst.List):
        return target
    for element in target.elements:
        part = element.value
        base = part
        while isinstance(base, _TARGETS):
            base = base.value
        if isinstance(base, cst.Name) and base.value == root:
            return _written(part, root) if isinstance(part, cst.Tuple | cst.List) else part
        if isinstance(part, cst.Tuple | cst.List) and _written(part, root) is not part:
            return _written(part, root)
    return target


def _no_wrapping(
    statement: cst.CSTNode, jax_name: str
) -> dict[cst.BaseExpression, cst.BaseExpression]:
    """What JF103 stores or logs moves as it is."""
    return {}


def _write_only(analysis: TracedAnalysis, node: cst.Name | cst.Attribute) -> bool:
    """`node` is only written through: the receiver of `.append(...)` and the like, the base
    of an attribute or item that is assigned, or (an attribute) assigned itself."""
    parent = analysis.parent(node)
    if isinstance(parent, cst.Attribute) and parent.value is node:
        call = analysis.parent(parent)
        if isinstance(call, cst.Call) and call.func is parent:
            return parent.attr.value in MUTATORS
    current: cst.CSTNode = node
    while isinstance(parent, _TARGETS) and parent.value is current:
        current, parent = parent, analysis.parent(parent)
    if current is node and not isinstance(node, cst.Attribute):
        return False
    return isinstance(parent, cst.AssignTarget) or (
        isinstance(parent, cst.AnnAssign) and parent.target is current
    )


# `LeakInTracedCommand`: this rule as a LibCST codemod (`python -m libcst.tool codemod`).
__getattr__, __dir__ = command_hooks(LeakInTraced)
