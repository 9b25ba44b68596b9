"""JF104 host-conversion-in-traced: NumPy, `float()`, `.item()` or `print` of a traced value."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

import libcst as cst
from libcst.metadata import GlobalScope

from jaxfix.analysis.candidates import HOST_INDEXES, TEXT_METHOD
from jaxfix.analysis.reasons import abstract_only
from jaxfix.fixes.call_sites import uses_of
from jaxfix.fixes.debug_print import FORMAT, SCALARS, literal, print_arguments
from jaxfix.fixes.eager_calls import (
    IN_PLACE,
    EagerCalls,
    eager_calls,
    references,
    writes_into,
    written,
)
from jaxfix.fixes.fix import Fix, ImportNeeded
from jaxfix.fixes.hoist import (
    TIGHT,
    gating_if,
    is_host_only_target,
    jax_module_name,
    jax_numpy_name,
)
from jaxfix.fixes.host_effects import Hoists, wait_in_importers
from jaxfix.fixes.host_solver import solver_callback
from jaxfix.fixes.returns import DUMPS
from jaxfix.fixes.syntax import calls_in, payload_of, source_of
from jaxfix.fixes.text_files import written_as_text
from jaxfix.fixes.tracing import Statement, TracedFunction
from jaxfix.models import numpy_scipy
from jaxfix.models.diagnostic import FixSafety
from jaxfix.models.host_solvers import SOLVERS, Solver
from jaxfix.models.loggers import LOGGER_METHODS, LOGGING_MODULES, METRICS_METHODS
from jaxfix.models.namesakes import JNP_EQUIVALENTS, SCIPY_EQUIVALENTS, JnpEquivalent
from jaxfix.models.sinks import FIRST, Sink, SinkKind, names_of
from jaxfix.rules.rule import Rule, command_hooks

# The NumPy and SciPy functions that convert a traced argument, as measured by calling each on
# tracers under the pinned jax (`scripts/numpy_model.py`): those that run for some arguments
# (`np.sum`, `np.reshape`: the array's own method) are not here, nor NumPy's savers (JF101's).
LIBRARY_SINKS = numpy_scipy.converting()
# Built-ins that need the concrete value of their first argument, with the error they raise.
SINKS = tuple(
    Sink(f"builtins.{name}", SinkKind.CONVERT, FIRST, error)
    for name, error in [
        ("float", "ConcretizationTypeError"),
        ("int", "ConcretizationTypeError"),
        ("complex", "ConcretizationTypeError"),
        ("bool", "TracerBoolConversionError"),
    ]
)
PRINT = "builtins.print"
SUM = "builtins.sum"
# Conversions to a Python number: printed, they show what `jax.debug.print` shows of the array.
DEVICE_GET = "jax.device_get"
# Array methods that need the values on the host (both raise `ConcretizationTypeError`).
CONVERTING_METHODS = frozenset({"item", "tolist"})
# Calls whose text of a tracer is its name: kept or used, the text holds no value.
TEXT_BUILTINS = frozenset({"builtins.str", "builtins.repr"})
# Array methods whose result leaves traced computation (the fixed NumPy call must not feed them).
_HOST_METHODS = frozenset({"item", "tolist", "tobytes", "tofile", "dump", "dumps", "format"})
# A `try` catching one of these around a conversion handles the traced case on purpose.
CAUGHT_BUILTINS = frozenset({"builtins.Exception", "builtins.BaseException", "builtins.TypeError"})
CONVERSION_ERRORS = frozenset(
    {
        "ConcretizationTypeError",
        "TracerArrayConversionError",
        "TracerBoolConversionError",
        "TracerIntegerConversionError",
        "JAXTypeError",
    }
)
# Expressions whose value is still an array when an operand is (or a container of arrays).
_ARRAY_EXPRESSIONS = (
    cst.BinaryOperation,
    cst.Subscript,
    cst.SubscriptElement,
    cst.Index,
    cst.Element,
    cst.Tuple,
    cst.List,
)
# What a NumPy call made `jax.numpy` changes when it runs on concrete values.
_EAGER = "there `jax.numpy` would return a float32 `jax.Array` where NumPy gives float64"
_EAGER_TITLE = "eager calls get a float32 `jax.Array` where NumPy gave a float64 `ndarray`"
# Why a namesake is not put in: its result may reach host state, which would keep a tracer.
_KEPT = " where its result stays in traced code (not rewritten: here it may reach host state)"


class HostConversionInTraced(Rule):
    """
    ## What it does
    Finds code that needs the *values* of a traced array on the host, inside a function that jax
    traces: NumPy and SciPy functions applied to it (`np.asarray`, `np.sin`, `np.percentile`,
    `np.linalg.norm`, `scipy.special.expit`, `scipy.stats.t.logpdf`...: every public function
    that converts a tracer when called on one under the pinned jax, as listed in
    `jaxfix/models/numpy_scipy.tsv`, which `scripts/numpy_model.py` generates), `float()`,
    `int()`, `bool()`, `complex()`, `.item()`, `.tolist()`, `jax.device_get`, `print` of it
    (directly, or formatted by an f-string, `str.format` or `%`), `str.format` of it, and
    `str(x)` / `repr(x)` of it kept or used elsewhere than in `print` or an error's message.
    Logging and metrics calls (`logging.info`, `wandb.log`...) are JF103's, and text that goes
    straight into a write to a file (`log.write("loss " + str(loss))`) is JF101's: one bug,
    one finding.

    A NumPy array indexed by a traced value (`TABLE[i]`, `COUNTS[i] = 1.0`; `TABLE` made by
    NumPy where the analysis sees it) or given one (`TABLE[0] = x.sum()`) is reported too:
    NumPy asks the tracer for its value.

    ## Why is this bad?
    Inside a trace an array is a `Tracer`: a shape and a dtype, no data. NumPy and SciPy raise
    `jax.errors.TracerArrayConversionError` (`TracerIntegerConversionError` for a traced size,
    `np.zeros(n)`), `float`/`int`/`.item()`/`.tolist()` raise
    `ConcretizationTypeError` and `bool` raises `TracerBoolConversionError`. `print` and
    `str.format`, `str` and `repr` do not fail: they run once, when the function is traced,
    and show the tracer (`JitTracer(float32[3])`) instead of the values (an f-string format
    spec such as `:.3f` raises `TypeError`): a status line or a key made from that text never
    holds a value. `jax.device_get` returns the tracer unchanged (reported where the function
    only runs traced: where code in view also calls it eagerly, it copies there). Shapes, `len(x)`,
    `x.ndim`, `x.dtype` and static arguments are concrete and are not reported.

    ## Example
    ```python
    @jax.jit
    def step(x):
        y = np.sin(x)
        print(f"y {y[0]:.3f}")
        return float(y.sum())
    ```

    ## Use instead
    ```python
    @jax.jit
    def step(x):
        y = jnp.sin(x)
        jax.debug.print("y {:.3f}", y[0], ordered=True)
        return y.sum()
    ```
    For host-only code with no JAX equivalent, use
    `jax.pure_callback(fn, jax.ShapeDtypeStruct(shape, dtype), x)`, or do it after the jitted
    call, on its result. (`np.sum(x)`, `np.reshape(x, -1)` and the other NumPy functions that
    call the array's own method work on a tracer and are not reported, nor is a function that
    runs on a tracer for some of the arguments tried.)

    ## Fix safety
    Unsafe. `print` becomes `jax.debug.print`, which prints when the compiled function
    *runs*: on every call instead of once at tracing, once per element under `vmap`, and with
    NumPy's formatting of the values. A NumPy call with a `jax.numpy` namesake of the same
    meaning (`np.sin`, `np.asarray`, `np.percentile`...) becomes that call when its result
    stays in the traced computation (array arithmetic, JAX functions, NumPy functions that run
    on a tracer such as `np.mean`, `sum` of a generator, a local name, an attribute that
    `__init__` sets on the object it builds, when traced code constructs the class) and traced
    code neither
    writes into it nor indexes with it (`y[np.asarray(~jnp.isnan(y))]`: a traced boolean
    mask has no static shape; an integer dtype given to the call is fine). Where the function
    may also run outside a trace (it is public, a method, or called eagerly in the module),
    the rewritten call returns a float32 `jax.Array` there where NumPy gave a float64
    `ndarray`, and the fix's title says so; when an eager call in view needs the NumPy array
    (it writes into the result, reads its `.dtype`, hands it to a function jaxfix does not
    know, or the function is passed on as a value), the finding says why it is not
    rewritten. `float(x)`,
    `int(x)` and `x.item()` printed as they are (`print(float(loss))`,
    `print(f"{x.item():.3f}")`) become a `jax.debug.print` of `x` (NumPy prints a float32
    with more digits than Python's `float`). `float(x)` and `int(x)` whose value only feeds
    traced computation without passing through a local name (a helper's `return
    float(np.sum(...))` whose callers stack the results) stay arrays: `jnp.asarray(x,
    dtype=float)` (float32, or int32 for `int`, unless x64 is enabled; a local name may be
    read by Python code, `range(n)`, where an array fails too). Their other uses have no
    fix. A conversion (NumPy
    or scalar) in a statement that only changes host state (`ACTS.append(np.asarray(h))`,
    `LOSSES.append(float(loss))`, `self.last = x.item()`, `TABLE[0] = x.sum()` into a
    module-level array) moves with the statement into a
    host callback, as JF103's stores do: there it gets concrete values (a `jax.numpy` result
    would leak a tracer into the host state), and host code that reads the state after a call
    waits for it with `jax.effects_barrier()`. An `if` whose test converts a traced value and
    whose branches only change host state (`if int(step) % every == 0: save(params)`) only
    gates host effects: it moves into the callback whole, where the test gets concrete values.
    `scipy.special`'s
    `expit`, `logit`, `erf`, `erfc`, `gammaln`, `xlogy`, `xlog1py`, `softmax`, `log_softmax`
    and `logsumexp` become their `jax.scipy.special` namesakes on the NumPy calls' conditions.
    A SciPy optimizer or root finder given traced values (`res = minimize(objective, x0=x0)`,
    `root = brentq(f, a, b)`: `jaxfix/models/host_solvers.py`) runs whole in
    `jax.pure_callback`, with the functions defined for it alone (which then close over
    concrete values) and a traced starting point computed first; the fields of its result the
    code reads (`res.x`, `res.fun`) come back with the starting point's shape and dtype or as
    scalars of jax's default dtypes. The solve then runs at each call, and cannot be
    differentiated: under `grad` there is no fix. The function handed to a solver is not
    reported: the solver calls it on the host, with NumPy values.
    The rest of SciPy and the other NumPy functions are diagnostic only; the message names
    their `jax.numpy` / `jax.scipy` namesake when there is one, which may differ in meaning.
    The conversions of one statement are fixed together or not at all: one left would still
    fail there. `TABLE[i]` becomes `jnp.asarray(TABLE)[i]` on the same condition: an index out
    of range is clamped instead of raising `IndexError`, and float64 values become float32
    unless x64 is enabled.

    ## References
    - https://docs.jax.dev/en/latest/errors.html#jax.errors.TracerArrayConversionError
    - https://docs.jax.dev/en/latest/errors.html#jax.errors.ConcretizationTypeError
    - https://docs.jax.dev/en/latest/debugging/print_breakpoint.html
    - https://docs.jax.dev/en/latest/external-callbacks.html
    """

    code = "JF104"
    name = "host-conversion-in-traced"
    summary = "NumPy, float(), .item() or print of a traced value inside traced code"
    message = "`{call}` {problem} inside `{function}` ({reason}); {advice}"
    fix_title = (
        "Print with `jax.debug.print`, call the `jax.numpy` equivalent, keep `float()` / `int()`"
        " an array, move the statement to a host callback, or run a SciPy solver in"
        " `jax.pure_callback`"
    )
    # Each fix's own title says which of these it is (`{...}`: what the finding names).
    hoist_title = "Move the statement to a host callback (`jax.debug.callback`)"
    print_title = "Print with `jax.debug.print`, when the compiled function runs"
    rename_title = "Call `{new}` in place of `{old}`"
    index_title = "Index `jax.numpy.asarray({table})`"
    kept_title = "Keep `{dtype}(...)` an array: `jnp.asarray(..., dtype={dtype})`"
    solver_title = (
        "Run `{solver}` on the host in `jax.pure_callback` (at each call, on concrete values;"
        " it cannot be differentiated)"
    )
    fix_safety = FixSafety.UNSAFE
    unfixed = (
        "NumPy calls whose eager callers in the file need the NumPy array (they write into it, "
        "read its `.dtype`, or hand it to a library jaxfix does not know); NumPy results that "
        "traced code writes into or uses as a mask index; conversions that feed Python control "
        "flow (`if float(x) > 0`): make them `jnp.where` or `lax.cond`; SciPy solvers under "
        "`grad`, or whose result is used other than through the fields jaxfix knows; "
        "`float()` / `int()` whose value goes into a local name (Python code may read it)"
    )
    sinks = SINKS
    reads_users = True  # a function's eager callers rule out the `jax.numpy` rewrite
    reads_after_calls = True  # the hoisting fix waits for the callback where host code reads
    project_aware = True  # other modules' reads after calls of a function it hoists from
    anchors = (
        LIBRARY_SINKS
        | frozenset(SOLVERS)
        | names_of(SINKS, SinkKind.CONVERT)
        | {PRINT, DEVICE_GET, "builtins.format", TEXT_METHOD + FORMAT}
        | TEXT_BUILTINS
        | CONVERTING_METHODS
        | {HOST_INDEXES}
    )
    run_time_anchors = frozenset({PRINT, "builtins.format", TEXT_METHOD + FORMAT}) | TEXT_BUILTINS
    # See `_converts_traced` and `_texts_traced`.
    sure_tracer_anchors = names_of(SINKS, SinkKind.CONVERT) | TEXT_BUILTINS

    def visit_Subscript(self, node: cst.Subscript) -> None:
        """`TABLE[i]`: a NumPy array (made by NumPy where the analysis sees it) indexed by a
        tracer; `TABLE[i] = value`: a tracer written into one."""
        context = self.traced.context_of(node)
        if context is None:
            return
        if self._is_assigned(node):
            if self.traced.writes_host_array(node):
                self._report_write(node, context)
            return
        indices = [e.slice.value for e in node.slice if isinstance(e.slice, cst.Index)]
        if not any(map(self.traced.is_traced, indices)) or not self.traced.is_host_array(
            node.value
        ):
            return
        jnp_name, imports = jax_numpy_name(self.traced, node)
        advice = f"index `jax.numpy.asarray({source_of(node.value)})` instead"
        fix, advice = self._hoisted(node, advice)
        if fix is None and jnp_name and self._stays_traced(node):
            array = cst.parse_expression(f"{jnp_name}.asarray(x)")
            assert isinstance(array, cst.Call)
            table = array.with_changes(args=[cst.Arg(node.value)])
            title = self.index_title.format(table=source_of(node.value))
            fix, advice = self._if_never_eager(
                self.make_fix({node.value: table}, imports, title=title), advice, context
            )
        message = self.message.format(
            call=source_of(node),
            problem=f"indexes a NumPy array with a traced value (`{_ARRAY_ERROR}`)",
            function=context.label,
            reason=context.reasons[0],
            advice=advice,
        )
        self.report(node, message, fix)

    def _is_assigned(self, target: cst.Subscript) -> bool:
        """Whether `target` is what an assignment writes to (`TABLE[i] = v`, `TABLE[i] += v`)."""
        parent = self.traced.parent(target)
        return isinstance(parent, cst.AssignTarget) or (
            isinstance(parent, cst.AugAssign | cst.AnnAssign) and parent.target is target
        )

    def _report_write(self, node: cst.Subscript, context: TracedFunction) -> None:
        """`TABLE[i] = value` with a traced value or index: moved into a host callback when the
        statement only changes host state (a module-level array), else reported."""
        advice = (
            f"return the value and write it into `{source_of(node.value)}` after the call, or"
            f" use a `jax.numpy` array (`.at[...].set(...)`)"
        )
        fix, advice = self._hoisted(node, advice)
        indices = [e.slice.value for e in node.slice if isinstance(e.slice, cst.Index)]
        problem = (
            f"writes into a NumPy array at a traced index (`{_ARRAY_ERROR}`)"
            if any(map(self.traced.is_traced, indices))
            else "writes a traced value into a NumPy array (`ConcretizationTypeError`)"
        )
        message = self.message.format(
            call=f"{source_of(node)} = ...",
            problem=problem,
            function=context.label,
            reason=context.reasons[0],
            advice=advice,
        )
        self.report(node, message, fix)

    def visit_Call(self, node: cst.Call) -> None:
        context = self.traced.context_of(node)
        if context is None:
            return
        found = self._reported(node)
        if found is None:
            return
        if found.display in {"print", "str.format", "format"} and abstract_only(context.reasons):
            return  # `jax.eval_shape` never runs the function: a print at trace time is all
        if found.fix is not None and not found.moves_statement:
            blocking = self._unfixed_beside(node)
            if blocking is not None:
                advice = f"{found.advice} (not rewritten: `{blocking}` in the same statement"
                advice += " has no fix, and the statement would still fail)"
                found = replace(found, advice=advice, fix=None)
        message = self.message.format(
            call=found.display,
            problem=found.problem,
            function=context.label,
            reason=context.reasons[0],
            advice=found.advice,
        )
        self.report(node, message, found.fix)

    # ----- what is reported -----------------------------------------------------------------

    def _reported(self, call: cst.Call) -> _Finding | None:
        """The finding at `call`, unless logging or a `try:` around it handles it, or it makes
        the text a write to a file gets (JF101 reports the write)."""
        found = self._finding(call)
        if found is None or self._in_logging_call(call) or self._error_caught(call):
            return None
        if found.text and written_as_text(self.traced, self.qualified_names, call):
            return None
        return found

    def _unfixed_beside(self, call: cst.Call) -> str | None:
        """A conversion without a fix in the statement that holds `call` (the statement's
        fixes are made together or not at all), as written."""
        statement: cst.CSTNode | None = call
        while statement is not None and not isinstance(
            statement, cst.SimpleStatementLine | cst.BaseCompoundStatement
        ):
            statement = self.traced.parent(statement)
        line = statement if isinstance(statement, cst.SimpleStatementLine) else call
        for other in calls_in(line):
            if other is call:
                continue
            found = self._reported(other)
            if found is not None and found.fix is None:
                return found.display
        return None

    def _finding(self, call: cst.Call) -> _Finding | None:
        names = self.qualified_names(call.func)
        name = min(names) if names else ""
        model = numpy_scipy.sink(name)
        if model is not None and self._any_traced(call):
            return self._library_finding(call, model)
        solver = SOLVERS.get(name)
        if solver is not None and self._any_traced(call):
            return self._solver_finding(call, solver)
        conversion = self._conversions.get(name)
        if conversion is not None and self._converts_traced_payload(call, conversion):
            error = f" (`{conversion.detail}`)" if conversion.detail else ""
            problem = f"needs a concrete value but gets a traced one{error}"
            if name == "builtins.bool":
                advice = "use `jnp.where` or `lax.cond`, or make the argument static"
            else:
                advice = (
                    "keep it an array (`x.astype(...)`), make the argument static, or convert"
                    " the jitted function's result"
                )
            fix = self._printed_fix(call) if name in SCALARS else None
            if fix is None and name in SCALARS:
                fix, advice = self._kept_array(call, name, advice)
            if fix is None:
                fix, advice = self._hoisted(call, advice)
            return _Finding(name.removeprefix("builtins."), problem, advice, fix)
        if name == DEVICE_GET and self._any_traced(call) and not self._runs_eagerly(call):
            problem = "returns the traced value unchanged: nothing reaches the host"
            advice = "call it on the jitted function's result, or use `jax.debug.callback`"
            return _Finding(source_of(call.func), problem, advice)
        if name == PRINT and any(self._prints_traced(arg.value) for arg in call.args):
            problem = (
                "prints the tracer once, at tracing, not the values (a format spec raises"
                " `TypeError`)"
            )
            fix, advice = self._print_fix(call), "use `jax.debug.print`"
            if fix is None:
                fix, advice = self._hoisted(call, advice)
            return _Finding("print", problem, advice, fix)
        if name == "builtins.format" and self._any_traced(call) and not self._in_print(call):
            return _Finding("format", _FORMATS, _FORMAT_ADVICE, text=True)
        if name in TEXT_BUILTINS and self._texts_traced(call):
            fix, advice = self._hoisted(call, _FORMAT_ADVICE)
            return _Finding(name.removeprefix("builtins."), _TEXT, advice, fix, text=True)
        if not isinstance(call.func, cst.Attribute):
            return None
        return self._method(call, call.func)

    def _library_finding(self, call: cst.Call, model: numpy_scipy.FunctionModel) -> _Finding:
        """A NumPy or SciPy sink: the error the model table saw, and its jax namesake."""
        name = model.function
        if model.detail == "TracerArrayConversionError":
            problem = _TO_NUMPY
        else:
            problem = f"needs a concrete value but gets a traced one (`{model.detail}`)"
        short = name.removeprefix("numpy.")
        if short in JNP_EQUIVALENTS:
            advice = f"use `jax.numpy.{short}`"
        elif name in SCIPY_EQUIVALENTS:
            advice = f"use `{model.namesake}`"
        elif model.namesake is not None:
            advice = f"use `{model.namesake}` if it fits, or `jax.pure_callback`{_SHAPE}"
        else:
            advice = f"use `jax.pure_callback`{_SHAPE}, or call it on the jitted function's result"
        hoisted, hoist_advice = self._hoisted(call, advice)
        if hoisted is not None:  # a `jax.numpy` result would leak into the host state
            return _Finding(source_of(call.func), problem, hoist_advice, hoisted)
        if (short in JNP_EQUIVALENTS or name in SCIPY_EQUIVALENTS) and not self._stays_traced(call):
            advice += _KEPT
        fix = (
            self._jnp_fix(call, short)
            if name.startswith("numpy.")
            else self._scipy_fix(call, name, model.namesake)
        )
        context = self.traced.context_of(call)
        failing = self._still_failing(call) if fix is not None else ""
        if failing:
            fix, advice = None, f"{advice} (not rewritten: {failing})"
        if fix is not None and context is not None:
            fix, advice = self._if_never_eager(fix, advice, context)
        return _Finding(source_of(call.func), problem, advice, fix)

    def _solver_finding(self, call: cst.Call, solver: Solver) -> _Finding:
        """A SciPy solver given traced arguments: the whole solve moves into
        `jax.pure_callback` (see `jaxfix.fixes.host_solver`)."""
        short = solver.function.rsplit(".", 1)[-1]
        advice = (
            f"run `{short}` on the host in `jax.pure_callback`{_SHAPE}, or use a JAX solver"
            " (`jax.scipy.optimize`, optimistix)"
        )
        context = self.traced.context_of(call)
        rewrite = solver_callback(self.traced, call, solver, context) if context else "?"
        if isinstance(rewrite, str):
            return _Finding(source_of(call.func), _TO_NUMPY, f"{advice} (not rewritten: {rewrite})")
        title = self.solver_title.format(solver=short)
        fix = self.make_fix(rewrite.replacements, rewrite.imports, title=title)
        return _Finding(source_of(call.func), _TO_NUMPY, advice, fix, moves_statement=True)

    def _still_failing(self, call: cst.Call) -> str:
        """Why traced code would still fail on what `call` gives once it is a `jax.Array`
        ("" if it would not): it writes into it (a `jax.Array` is immutable) or indexes with
        it, which for a boolean mask gives a shape that depends on the values."""
        uses: list[cst.CSTNode] = [call]
        parent = self.traced.parent(call)
        if isinstance(parent, cst.Assign):
            names = [t.target for t in parent.targets if isinstance(t.target, cst.Name)]
            uses = [use for name in names for use in references(self.traced, name)]
        for use in uses:
            up = self.traced.parent(use)
            if isinstance(up, cst.Subscript) and up.value is use and written(self.traced, up):
                return "a `jax.Array` cannot be written into: use `x.at[i].set(v)`"
            if isinstance(up, cst.Attribute) and up.attr.value in IN_PLACE:
                return f"a `jax.Array` has no in-place `.{up.attr.value}()`"
            if isinstance(up, cst.Arg) and writes_into(self.traced, up):
                return (
                    f"`{writes_into(self.traced, up)}` writes into it: a `jax.Array` is immutable"
                )
            element = self.traced.parent(up) if isinstance(up, cst.Index) else None
            indexed = self.traced.parent(element) if element is not None else None
            if isinstance(indexed, cst.Subscript) and not _integer_result(call):
                return (
                    f"it indexes `{source_of(indexed.value)}`: as a boolean mask in traced"
                    " code its shape would depend on the values"
                    " (`NonConcreteBooleanIndexError`); mask with `jnp.where`"
                )
        return ""

    def _hoisted(self, conversion: cst.Call | cst.Subscript, advice: str) -> tuple[Fix | None, str]:
        """For a conversion whose statement only changes host state (`ACTS.append(np.asarray
        (h))`, `self.last = float(loss)`): the statement moved into a host callback, where the
        conversion gets concrete values, and the advice that says so; else no fix."""
        statement: Statement | None = self.traced.simple_statement(conversion, through_applied=True)
        if statement is not None and not self._host_statement(statement):
            statement = None
        gate = gating_if(self.traced, statement or conversion, self._host_statement)
        statement = gate or statement
        if statement is None:
            return None, advice
        fix = self._hoists.fix(statement, "_host_" + _last_name(statement))
        if not isinstance(fix, Fix):
            return None, advice
        if gate is not None:
            return fix, "run the `if` that gates host effects in `jax.debug.callback`"
        return fix, "run the statement in `jax.debug.callback`, where the values are concrete"

    def _host_statement(self, statement: Statement) -> bool:
        """A statement whose only effect is on host state: a method called, its result
        dropped, on a module-level object or an attribute of one from outside the function
        (`ACTS.append(...)`, `self.history.append(...)`), or an assignment only the host
        sees (`self.last = ...`, a `global`)."""
        if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
            return False
        small = statement.body[0]
        if isinstance(small, cst.Assign):
            return all(is_host_only_target(self.traced, t.target) for t in small.targets)
        if not isinstance(small, cst.Expr) or not isinstance(small.value, cst.Call):
            return False
        func = small.value.func
        if not isinstance(func, cst.Attribute):
            return False
        receiver = func.value
        if isinstance(receiver, cst.Name):
            bound = self.traced.assignments(receiver)
            return bool(bound) and all(isinstance(a.scope, GlobalScope) for a in bound)
        return is_host_only_target(self.traced, receiver)

    def _runs_eagerly(self, call: cst.Call) -> bool:
        """Whether code in view also runs the function around `call` outside a trace, where
        the call does its work (`jax.device_get` copies to the host there)."""
        context = self.traced.context_of(call)
        return context is not None and self._eager_calls(context).in_view

    def _eager_calls(self, context: TracedFunction) -> EagerCalls:
        if context.node not in self._eager:
            self._eager[context.node] = eager_calls(self.traced, context)
        return self._eager[context.node]

    def _if_never_eager(
        self, fix: Fix, advice: str, context: TracedFunction
    ) -> tuple[Fix | None, str]:
        """`fix` (NumPy made `jax.numpy`) unless host code in view that
        runs the function eagerly needs its NumPy result; where the function may run eagerly,
        the fix's title says what changes there."""
        eager = self._eager_calls(context)
        if eager.blocked:
            return None, f"{advice} (not rewritten: {eager.blocked}; {_EAGER})"
        if not eager.callers:
            return fix, advice
        title = f"{fix.title}; {_EAGER_TITLE} ({eager.callers})"
        return replace(fix, title=title), advice

    def _method(self, call: cst.Call, func: cst.Attribute) -> _Finding | None:
        """`.item()` / `.tolist()` of a traced array, `"...".format(traced)`."""
        method = func.attr.value
        if method in CONVERTING_METHODS and self.traced.is_traced(func.value):
            if self.qualified_names(func.value):
                return None  # a module's function, not an array's method
            problem = "needs a concrete value but gets a traced one (`ConcretizationTypeError`)"
            advice = "keep the array, or convert the jitted function's result"
            fix = self._printed_fix(call) if method == "item" else None
            if fix is None:
                fix, advice = self._hoisted(call, advice)
            return _Finding(f".{method}()", problem, advice, fix)
        if (
            method == FORMAT
            and isinstance(func.value, cst.SimpleString | cst.Name)
            and not self.traced.is_traced(func.value)
            and not self.traced.holds_instance(func.value)  # `checker.format(...)`
            and self._any_traced(call)
            and not self._in_print(call)
            and not self.traced.raising(call)
        ):
            return _Finding("str.format", _FORMATS, _FORMAT_ADVICE, text=True)
        return None

    def leave_Module(self, original_node: cst.Module) -> None:
        wait_in_importers(self)  # the reads after other modules' functions' callbacks

    def prepare(self) -> None:
        """The conversion sinks by full name (the built-ins and the project's), and the
        project's logging functions (`[tool.jaxfix.sinks] log`), whose arguments are JF103's."""
        self._conversions = {row.callable: row for row in self.sink_rows(SinkKind.CONVERT)}
        self._hoists = Hoists(self, self._host_statement, _nothing_wrapped)
        self._eager: dict[cst.CSTNode, EagerCalls] = {}  # who may run a function eagerly
        self._returning: set[cst.FunctionDef] = set()  # see `_returned_stays_traced`
        self._logging_functions = self.sink_names(SinkKind.LOG)

    def _converts_traced_payload(self, call: cst.Call, conversion: Sink) -> bool:
        """The argument `conversion` needs the value of is traced."""
        arguments = payload_of(call, conversion.payload or FIRST)
        return bool(arguments) and self._converts_traced(arguments[0])

    def _converts_traced(self, value: cst.BaseExpression) -> bool:
        """Traced, and not a parameter that is a tracer only by a guess (`bool(leaf)` in a
        `tree_map` of a filter spec, `n: int` of a helper traced through its callers)."""
        return self.traced.is_traced(value) and not self.traced.guessed_parameter(value)

    def _texts_traced(self, call: cst.Call) -> bool:
        """`str(x)` / `repr(x)` of a certain tracer, whose text is kept or used: not printed
        (`print` reports it), not an error's message, not of a serialization (JF101's)."""
        arguments = [a.value for a in call.args if a.keyword is None and not a.star]
        return (
            len(arguments) == len(call.args) == 1
            and not self._serialized(arguments[0])
            and self._converts_traced(arguments[0])
            and not self._in_print(call)
            and not self.traced.raising(call)
        )

    def _serialized(self, value: cst.BaseExpression) -> bool:
        """What a serializer makes of its argument (`pickle.dumps(x)`: JF101 reports it)."""
        return isinstance(value, cst.Call) and bool(self.qualified_names(value.func) & DUMPS.keys())

    def _prints_traced(self, value: cst.BaseExpression) -> bool:
        """Traced, and not what a serializer makes of a traced value (JF101 reports that)."""
        if self._serialized(value):
            return False
        if isinstance(value, cst.BinaryOperation):
            return self._prints_traced(value.left) or self._prints_traced(value.right)
        return self._shows_traced(value)

    def _any_traced(self, call: cst.Call) -> bool:
        return any(self._shows_traced(arg.value) for arg in call.args)

    def _shows_traced(self, expr: cst.BaseExpression) -> bool:
        """Whether `expr` is traced, or a string made from a traced value (an f-string, `%`)."""
        if isinstance(expr, cst.FormattedString):
            return any(
                isinstance(part, cst.FormattedStringExpression)
                and self._shows_traced(part.expression)
                for part in expr.parts
            )
        if isinstance(expr, cst.ConcatenatedString):
            return self._shows_traced(expr.left) or self._shows_traced(expr.right)
        return self.traced.is_traced(expr)

    # ----- whose finding it is --------------------------------------------------------------

    def _enclosing_calls(self, node: cst.CSTNode) -> list[cst.Call]:
        """The calls whose arguments hold `node`, innermost first, within its statement."""
        found: list[cst.Call] = []
        child, parent = node, self.traced.parent(node)
        while parent is not None and not isinstance(
            parent, cst.BaseStatement | cst.Lambda | cst.BaseSmallStatement
        ):
            if isinstance(parent, cst.Call) and child is not parent.func:
                found.append(parent)
            child, parent = parent, self.traced.parent(parent)
        return found

    def _in_logging_call(self, node: cst.CSTNode) -> bool:
        """Inside the arguments of a logging or metrics call (JF103 reports those)."""
        return any(self._is_logging(call) for call in self._enclosing_calls(node))

    def _is_logging(self, call: cst.Call) -> bool:
        if self.traced.calls_own_function(call):
            return False  # a method of the module's class: what its body does is analysed
        names = self.qualified_names(call.func)
        if names & self._logging_functions or any(n.startswith(LOGGING_MODULES) for n in names):
            return True
        func = call.func
        return (
            not names
            and isinstance(func, cst.Attribute)
            and func.attr.value in LOGGER_METHODS | METRICS_METHODS
            and not self.qualified_names(func.value)  # `np.log(x)` is no logger
        )

    def _error_caught(self, node: cst.CSTNode) -> bool:
        """In the body of a `try` that catches the conversion error: handled on purpose."""
        child, parent = node, self.traced.parent(node)
        while parent is not None and not isinstance(parent, cst.FunctionDef | cst.Lambda):
            if (
                isinstance(parent, cst.Try)
                and child is parent.body
                and any(self._catches_conversion(h.type) for h in parent.handlers)
            ):
                return True
            child, parent = parent, self.traced.parent(parent)
        return False

    def _catches_conversion(self, caught: cst.BaseExpression | None) -> bool:
        if caught is None:
            return True  # a bare `except:`
        if isinstance(caught, cst.Tuple):
            return any(self._catches_conversion(e.value) for e in caught.elements)
        if self.qualified_names(caught) & CAUGHT_BUILTINS:
            return True
        if isinstance(caught, cst.Attribute):
            return caught.attr.value in CONVERSION_ERRORS
        return isinstance(caught, cst.Name) and caught.value in CONVERSION_ERRORS

    def _in_print(self, node: cst.CSTNode) -> bool:
        return any(PRINT in self.qualified_names(call.func) for call in self._enclosing_calls(node))

    # ----- fixes ----------------------------------------------------------------------------

    def _jnp_fix(self, call: cst.Call, short: str) -> Fix | None:
        takes = JNP_EQUIVALENTS.get(short)
        if takes is None or not self._called_as(call, takes) or not self._stays_traced(call):
            return None
        if short == "where" and len(call.args) != 3:
            return None
        jnp_name, imports = jax_numpy_name(self.traced, call)
        return self._renamed(call, f"{jnp_name}.{short}", imports) if jnp_name else None

    def _scipy_fix(self, call: cst.Call, name: str, namesake: str | None) -> Fix | None:
        """`scipy.special.expit(x)` -> `jax.scipy.special.expit(x)` (same-meaning ones)."""
        takes = SCIPY_EQUIVALENTS.get(name)
        if takes is None or namesake is None or not self._called_as(call, takes):
            return None
        if not self._stays_traced(call):
            return None
        jax_name, imports = jax_module_name(self.traced, call)
        new = f"{jax_name}.{namesake.removeprefix('jax.')}"
        return self._renamed(call, new, imports) if jax_name else None

    def _scalar_of(self, call: cst.Call) -> cst.BaseExpression | None:
        """What `float(x)` / `int(x)` converts (its one positional argument), else None."""
        if len(call.args) != 1 or call.args[0].star or call.args[0].keyword is not None:
            return None
        return call.args[0].value if self.qualified_names(call.func) & SCALARS else None

    def _kept_array(self, call: cst.Call, name: str, advice: str) -> tuple[Fix | None, str]:
        """`float(x)` -> `jnp.asarray(x, dtype=float)` (`int` alike) where the result only
        feeds traced computation (`_stays_traced`): there the conversion can only fail, and
        the array holds the same value (float32, or int32, unless x64 is enabled; `int`
        truncates toward zero as `astype` does). Where the function may run eagerly, the
        title says that its callers get an array there."""
        value = self._scalar_of(call)
        context = self.traced.context_of(call)
        if value is None or context is None or not self._stays_traced(call, scalar=True):
            return None, advice
        jnp_name, imports = jax_numpy_name(self.traced, call)
        if not jnp_name:
            return None, advice
        dtype = name.removeprefix("builtins.")
        new = cst.parse_expression(f"{jnp_name}.asarray({source_of(value)}, dtype={dtype})")
        title = self.kept_title.format(dtype=dtype)
        kept = new.with_changes(lpar=call.lpar, rpar=call.rpar)
        fix = self.make_fix({call: kept}, imports, title=title)
        return self._if_never_eager(fix, advice, context)

    def _called_as(self, call: cst.Call, takes: JnpEquivalent) -> bool:
        """Whether `call` passes only what the namesake takes the same way."""
        if any(arg.star for arg in call.args):
            return False
        keywords = [arg.keyword.value for arg in call.args if arg.keyword is not None]
        positional = len(call.args) - len(keywords)
        if not set(keywords) <= takes.keywords:
            return False
        return takes.positional is None or positional <= takes.positional

    def _renamed(self, call: cst.Call, func: str, imports: Sequence[ImportNeeded]) -> Fix:
        new = call.with_changes(func=cst.parse_expression(func))
        title = self.rename_title.format(new=func, old=source_of(call.func))
        return self.make_fix({call: new}, imports, removed_nodes=[call.func], title=title)

    def _stays_traced(self, value: cst.Call | cst.Subscript, scalar: bool = False) -> bool:
        """Whether `value` only feeds traced computation: array arithmetic, JAX functions, a
        local name, what a lambda or function returns where its callers keep it traced. The
        value of a `float()` / `int()` (`scalar`, also for what it converts, until a JAX
        function makes an array of it) may not go into a local name: Python code reads those
        (`range(n)`, `if n:`), and an array fails there as the conversion did."""
        node: cst.CSTNode = value
        while True:
            parent = self.traced.parent(node)
            if isinstance(parent, cst.Arg):
                outer = self.traced.parent(parent)
                if not isinstance(outer, cst.Call):
                    return False
                if self._scalar_of(outer) is not None:
                    scalar = True
                elif self._array_function(outer):
                    scalar = False  # what it gives is an array, whatever it was given
                else:
                    return False
                node = outer
            elif isinstance(parent, cst.Attribute):
                if parent.attr.value in _HOST_METHODS:
                    return False
                node = parent
            elif isinstance(parent, cst.Call) and node is parent.func:
                node = parent  # `np.asarray(x).reshape(...)`
            elif isinstance(parent, _ARRAY_EXPRESSIONS):
                node = parent
            elif isinstance(parent, cst.UnaryOperation):
                if isinstance(parent.operator, cst.Not):
                    return False
                node = parent
            elif isinstance(parent, cst.Lambda) and node is parent.body:
                node = parent  # what the lambda returns goes where its caller puts it
            elif isinstance(parent, cst.GeneratorExp | cst.ListComp) and node is parent.elt:
                node = parent  # arrays, one per element: where the comprehension goes
            elif isinstance(parent, cst.Return):
                return self._returned_stays_traced(parent, scalar)
            elif isinstance(parent, cst.Assign) and not scalar:
                return all(self._local_target(t.target) for t in parent.targets)
            elif isinstance(parent, cst.AnnAssign | cst.AugAssign) and not scalar:
                return self._local_target(parent.target)
            else:
                return False

    def _returned_stays_traced(self, statement: cst.Return, scalar: bool = False) -> bool:
        """Whether what a function returns stays traced where traced code in the module uses
        it: each call's result, and the result of each JAX call it is handed to
        (`tree_map(to_host, x)`). Uses the module does not show (a method's, another
        module's) are not seen; eager calls rule the rewrite out elsewhere (`_if_never_eager`)."""
        function = self.traced.owner_function(statement)
        if not isinstance(function, cst.FunctionDef) or function in self._returning:
            return True  # a use inside itself: the others decide
        self._returning.add(function)
        try:
            for name in uses_of(self.traced, function) or ():
                parent = self.traced.parent(name)
                handed_to = self.traced.parent(parent) if isinstance(parent, cst.Arg) else None
                if isinstance(parent, cst.Call) and parent.func is name:
                    use = parent
                elif isinstance(handed_to, cst.Call) and self._array_function(handed_to):
                    use = handed_to
                else:
                    continue
                if self.traced.context_of(use) is not None and not self._stays_traced(use, scalar):
                    return False  # on the host a jitted function's result is an array
            return True
        finally:
            self._returning.discard(function)

    def _array_function(self, call: cst.Call) -> bool:
        """A JAX function, a NumPy function this rule rewrites too or one that runs on a
        tracer (`np.mean`: the array's own method), or `sum` (of arrays: an array)."""
        names = self.qualified_names(call.func)
        return SUM in names or any(
            name.startswith("jax.")
            or (name.startswith("numpy.") and name.removeprefix("numpy.") in JNP_EQUIVALENTS)
            or numpy_scipy.works(name)
            for name in names
        )

    def _local_target(self, target: cst.BaseExpression) -> bool:
        if isinstance(target, cst.Tuple | cst.List):
            return all(self._local_target(e.value) for e in target.elements)
        owner = self.traced.owner_function(target)
        if isinstance(target, cst.Attribute) and isinstance(owner, cst.FunctionDef):
            return self._built_in_trace(target, owner)
        return isinstance(target, cst.Name) and target.value not in (
            self.traced.declared_outer_names(owner)
        )

    def _built_in_trace(self, target: cst.Attribute, owner: cst.FunctionDef) -> bool:
        """`self.data = ...` in `__init__` of a class that traced code constructs: the object
        being built belongs to the trace that builds it, as a local name does (an eager
        construction gets a `jax.Array` there: `_if_never_eager` names the callers)."""
        base = target.value
        return (
            owner.name.value == "__init__"
            and isinstance(base, cst.Name)
            and self.traced.self_made_in_trace(base)
        )

    def _printed_fix(self, conversion: cst.Call) -> Fix | None:
        """For `print(float(x))`, `print(f"{x.item()}")`: the `jax.debug.print` of the print
        that the conversion's value goes straight to."""
        node = self.traced.parent(conversion)
        if isinstance(node, cst.FormattedStringExpression):
            node = self.traced.parent(self.traced.parent(node) or conversion)
        printing = self.traced.parent(node) if isinstance(node, cst.Arg) else None
        if not isinstance(printing, cst.Call) or PRINT not in self.qualified_names(printing.func):
            return None
        return self._print_fix(printing)

    def _print_fix(self, call: cst.Call) -> Fix | None:
        converted = print_arguments(self.traced, call)
        if converted is None:
            return None
        template, args = converted
        if any(self._finding(inner) is not None for arg in args for inner in calls_in(arg)):
            return None  # `print(np.asarray(x))`: the inner conversion still fails
        jax_name, imports = jax_module_name(self.traced, call)
        if not jax_name:
            return None
        # `ordered=True`: prints run in program order, as the prints they replace did (an
        # accelerator runs unordered ones in any order); JAX refuses it over several devices.
        ordered = cst.Arg(cst.Name("True"), keyword=cst.Name("ordered"), equal=TIGHT)
        keywords = [] if self.traced.may_run_sharded() else [ordered]
        new = cst.Call(
            func=cst.parse_expression(f"{jax_name}.debug.print"),
            args=[cst.Arg(cst.SimpleString(literal(template))), *args, *keywords],
        )
        statement = self.traced.simple_statement(call)
        if statement is None:
            return self.make_fix({call: new}, imports, title=self.print_title)
        fix = self._hoists.printed(statement, {call: new}, imports, self.print_title)
        return fix if isinstance(fix, Fix) else None


@dataclass(frozen=True)
class _Finding:
    display: str  # the callee as written
    problem: str
    advice: str
    fix: Fix | None = None
    text: bool = False  # the tracer made into text (`str(x)`, `"{}".format(x)`)
    moves_statement: bool = False  # the fix runs the whole statement on the host


_ARRAY_ERROR = "TracerArrayConversionError"
_INTEGER = re.compile(r"\bu?int(8|16|32|64)?\b")
_TO_NUMPY = "converts a traced value to a NumPy array (`TracerArrayConversionError`)"
_SHAPE = " with a result shape"
_FORMATS = "formats the tracer, not the values (a format spec raises `TypeError`)"
_FORMAT_ADVICE = "pass the value to `jax.debug.print`, or format the jitted function's result"
_TEXT = "gives the tracer's name (`JitTracer(float32[])`), not the values"


def _integer_result(call: cst.Call) -> bool:
    """Whether the NumPy `call` is given an integer dtype (`np.asarray(i, dtype=np.int32)`,
    `np.int32(i)`): its result indexes as integers, never as a mask."""
    texts = [source_of(call.func)] + [source_of(arg.value) for arg in call.args[1:]]
    return any(_INTEGER.search(text) for text in texts)


def _nothing_wrapped(
    statement: Statement, jax_name: str
) -> dict[cst.BaseExpression, cst.BaseExpression]:
    """A hoisted conversion gets concrete values in the callback: nothing to copy first."""
    return {}


def _last_name(statement: Statement) -> str:
    """`append` for `ACTS.append(...)`, `store` for an assignment, the first branch's for an
    `if`: the host function's name."""
    if isinstance(statement, cst.If):
        first = statement.body.body[0]
        return _last_name(first) if isinstance(first, Statement) else "store"
    if not isinstance(statement, cst.SimpleStatementLine):
        return "store"
    small = statement.body[0]
    if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call):
        func = small.value.func
        if isinstance(func, cst.Attribute):
            return func.attr.value
    return "store"


# `HostConversionInTracedCommand`: this rule as a LibCST codemod (`python -m libcst.tool codemod`).
__getattr__, __dir__ = command_hooks(HostConversionInTraced)
