"""JF105 parallel-in-traced: host parallelism (processes, threads, queues) fed traced values."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass

import libcst as cst
from libcst.metadata import Assignment, GlobalScope

from jaxfix.analysis.candidates import BOUND
from jaxfix.fixes.fix import Fix, ImportNeeded, ReplaceNodes
from jaxfix.fixes.syntax import calls_in, parameter_names, parameters, source_of
from jaxfix.fixes.tracing import TracedFunction
from jaxfix.models.diagnostic import FixSafety
from jaxfix.models.sinks import Sink, SinkKind, names_of
from jaxfix.rules.rule import Rule, command_hooks


class Kind(enum.Enum):
    """What a constructor makes: where the values given to it go."""

    PROCESSES = "worker processes"
    THREADS = "worker threads"
    QUEUE = "another process"
    CONNECTION = "the other end of a pipe"
    PROCESS = "a child process"  # `Process(target=f, args=...)`
    THREAD = "a thread"  # `Thread(target=f, args=...)`
    FACTORY = "a context or manager"  # `get_context(...)` / `Manager()`: makes the others
    SHARED = "a manager's server process"  # `Manager().dict()` / `.list()`: a proxy
    CLUSTER = "a Dask cluster's workers"  # `dask.distributed.Client(...)`
    RAY = "Ray's object store"  # `ray.put(x)`
    REMOTE = "a Ray task"  # `f.remote(x)` of a function decorated `@ray.remote`
    DELAYED = "a Dask task graph"  # `dask.delayed(f)(x)`: run later, by a scheduler's workers


# Constructors, by their full names, and what they make (the row's detail: a `Kind`'s name; a
# project's constructor, with none, makes worker processes).
SINKS = tuple(
    Sink(name, SinkKind.PARALLEL, detail=kind.name)
    for name, kind in [
        ("multiprocessing.Pool", Kind.PROCESSES),
        ("multiprocessing.pool.Pool", Kind.PROCESSES),
        ("multiprocessing.pool.ThreadPool", Kind.THREADS),
        ("multiprocessing.dummy.Pool", Kind.THREADS),
        ("concurrent.futures.ProcessPoolExecutor", Kind.PROCESSES),
        ("concurrent.futures.process.ProcessPoolExecutor", Kind.PROCESSES),
        ("concurrent.futures.ThreadPoolExecutor", Kind.THREADS),
        ("concurrent.futures.thread.ThreadPoolExecutor", Kind.THREADS),
        ("multiprocessing.Queue", Kind.QUEUE),
        ("multiprocessing.SimpleQueue", Kind.QUEUE),
        ("multiprocessing.JoinableQueue", Kind.QUEUE),
        ("multiprocessing.Pipe", Kind.CONNECTION),
        ("multiprocessing.get_context", Kind.FACTORY),
        ("multiprocessing.Manager", Kind.FACTORY),
        # `Thread(target=f, args=(x,))`: the arguments its target runs with.
        ("threading.Thread", Kind.THREAD),
        ("threading.Timer", Kind.THREAD),  # `Timer(1.0, f, args=(x,))`
        ("multiprocessing.Process", Kind.PROCESS),
        ("dask.distributed.Client", Kind.CLUSTER),
        ("distributed.Client", Kind.CLUSTER),
        # Functions that send what they are given: `ray.put(x)`.
        ("ray.put", Kind.RAY),
        # Decorators whose function's `remote(x)` sends its arguments to a worker.
        ("ray.remote", Kind.REMOTE),
        # Wrappers whose result, called, makes a task of the arguments: `delayed(f)(x)`.
        ("dask.delayed", Kind.DELAYED),
        ("dask.delayed.delayed", Kind.DELAYED),
    ]
)
SPAWNED = frozenset({Kind.THREAD, Kind.PROCESS})
# What a context (`mp.get_context("spawn")`) or a manager (`mp.Manager()`) makes.
FACTORY_METHODS: dict[str, Kind] = {
    "Pool": Kind.PROCESSES,
    "Queue": Kind.QUEUE,
    "SimpleQueue": Kind.QUEUE,
    "JoinableQueue": Kind.QUEUE,
    "Pipe": Kind.CONNECTION,
    "dict": Kind.SHARED,
    "list": Kind.SHARED,
}
# Values of a manager's shared dict or list go to its server process: `shared[key] = value`
# (`ITEM_STORE`) and the methods that store their arguments.
ITEM_STORE = "__setitem__"

# The methods that send their arguments to the workers, by the kind of receiver.
METHODS: dict[Kind, frozenset[str]] = {
    Kind.PROCESSES: frozenset(
        {
            "map",
            "imap",
            "imap_unordered",
            "starmap",
            "starmap_async",
            "map_async",
            "apply",
            "apply_async",
            "submit",
        }
    ),
    Kind.QUEUE: frozenset({"put", "put_nowait"}),
    Kind.CONNECTION: frozenset({"send"}),
    Kind.SHARED: frozenset({"update", "setdefault", "append", "extend", "insert"}),
    Kind.CLUSTER: frozenset({"submit", "map", "scatter"}),
}
METHODS[Kind.THREADS] = METHODS[Kind.PROCESSES]
# Arguments of those methods that are not sent: the function and the pool's own options.
NOT_SENT = frozenset({"func", "fn", "callback", "error_callback", "chunksize", "timeout"})
# Method names rare enough in traced code to be anchors (`map` is `jax.tree.map` and `apply`
# is flax's `model.apply`): on a receiver made outside the traced function (a module-level
# queue) only these are reported, since only they put the call in the analysed slice, unless
# the receiver is a pool a top-level statement makes (`BOUND_MAKERS`).
RARE_METHODS = frozenset(
    {"imap", "imap_unordered", "starmap", "starmap_async", "map_async", "apply_async"}
    | {"submit", "put", "put_nowait", "send", "scatter"}
)
REMOTE = "remote"  # `f.remote(x)`: anchored by its name, as rare as those
# Pools and executors whose every method counts on a name the module binds once, at its top
# level, to one of them (`POOL = ThreadPoolExecutor(2)`): `candidates.BOUND` anchors them.
BOUND_MAKERS = frozenset(
    row.callable
    for row in SINKS
    if row.detail in (Kind.PROCESSES.name, Kind.THREADS.name, Kind.CLUSTER.name)
)
# A manager's shared dict or list that a top-level statement binds (`SHARED =
# Manager().dict()`), as `candidates.BOUND` names it: every method and item store counts.
BOUND_SHARED = frozenset(
    f"{row.callable}().{method}"
    for row in SINKS
    if row.detail == Kind.FACTORY.name
    for method, kind in FACTORY_METHODS.items()
    if kind is Kind.SHARED
)
SPAWNER_ARGUMENTS = {"args": 3, "kwargs": 4}  # keyword -> position (group, target, name first)
TIMER_ARGUMENTS = {"args": 2, "kwargs": 3}  # `Timer(interval, function, args, kwargs)`
TIMER = "threading.Timer"
PARALLEL = "joblib.Parallel"
DELAYED = "joblib.delayed"
THREAD_WHY = "a tracer is only valid in the thread that traces it"
WHY = {
    Kind.PROCESSES: "a tracer cannot be pickled",
    Kind.THREADS: THREAD_WHY,
    Kind.QUEUE: "a tracer cannot be pickled (a `multiprocessing.Queue` drops it silently"
    " in its feeder thread)",
    Kind.CONNECTION: "a tracer cannot be pickled",
    Kind.PROCESS: "a tracer cannot be pickled, and a forked child gets a useless copy of it",
    Kind.THREAD: THREAD_WHY,
    Kind.SHARED: "a tracer cannot be pickled",
    Kind.CLUSTER: "a tracer cannot be pickled",
    Kind.RAY: "a tracer cannot be pickled",
    Kind.REMOTE: "a tracer cannot be pickled",
    Kind.DELAYED: "its task runs later, in a scheduler's thread or process, where a tracer is"
    " invalid (and cannot be pickled)",
}
FAN_OUT = (
    "map the work with `jax.vmap`, run the pool outside the traced function, or call it"
    " through `jax.pure_callback` with the result's shape"
)
SEND = "send it from `jax.debug.callback`, or return it and send it after the call"
SPAWN = (
    "start the work outside the traced function, or from `jax.pure_callback` (with the"
    " result's shape) or `jax.debug.callback`"
)
HINTS = {
    Kind.PROCESSES: FAN_OUT,
    Kind.THREADS: FAN_OUT,
    Kind.QUEUE: SEND,
    Kind.CONNECTION: SEND,
    Kind.PROCESS: SPAWN,
    Kind.THREAD: SPAWN,
    Kind.SHARED: SEND,
    Kind.CLUSTER: FAN_OUT,
    Kind.RAY: SEND,
    Kind.REMOTE: FAN_OUT,
    Kind.DELAYED: FAN_OUT,
}
# The methods whose work takes each item of one iterable (`pool.map(work, items)`).
ITEM_METHODS = frozenset({"map", "imap", "imap_unordered"})
# Where the call sends values, and the values it sends.
Found = tuple[Kind, list[cst.BaseExpression]]


class Family(enum.Enum):
    """Whose pool a receiver is: what its methods return."""

    POOL = "multiprocessing"  # `map` gives a list
    EXECUTOR = "concurrent.futures"  # `map` gives an iterator


# How each method's work is written when it runs in the trace, one call after another: the
# template (`{f}` the function, `{args}` the rest of the positional arguments), and the pool
# options dropped; an `_async` method only when its result is taken at once (`.get()`), and
# `submit` only with `.result()`.
@dataclass(frozen=True)
class Sequential:
    template: str
    dropped: frozenset[str] = frozenset({"chunksize", "timeout"})
    taken_by: str | None = None  # the method of the result that waits for it


APPLY = "{f}({call})"  # `pool.apply(f, args, kwds)`: `f(*args, **kwds)`
APPLY_KEYWORDS = frozenset({"args", "kwds"})
SEQUENTIAL: dict[Family, dict[str, Sequential]] = {
    Family.POOL: {
        "map": Sequential("list(map({f}, {args}))"),
        "imap": Sequential("map({f}, {args})"),
        "imap_unordered": Sequential("map({f}, {args})"),
        "starmap": Sequential("list(itertools.starmap({f}, {args}))"),
        "map_async": Sequential("list(map({f}, {args}))", taken_by="get"),
        "starmap_async": Sequential("list(itertools.starmap({f}, {args}))", taken_by="get"),
        "apply": Sequential(APPLY),
        "apply_async": Sequential(APPLY, taken_by="get"),
    },
    Family.EXECUTOR: {
        "map": Sequential("map({f}, {args})"),
        "submit": Sequential("{f}({args})", frozenset(), taken_by="result"),
    },
}


@dataclass(frozen=True)
class Rewrite:
    """A pool call (`original`: the method call, or the `.get()` / `.result()` that takes its
    result) and what it becomes."""

    original: cst.Call
    new: cst.BaseExpression
    imports: tuple[ImportNeeded, ...] = ()


class ParallelInTraced(Rule):
    """
    ## What it does
    Finds host parallelism given traced values inside a function that jax traces: the
    `map` / `imap` / `starmap` / `apply` (and `_async`) methods of a `multiprocessing` pool,
    `submit` / `map` of a `concurrent.futures` executor, `put` / `put_nowait` of a
    `multiprocessing` queue, `send` of a `multiprocessing.Pipe` connection,
    `threading.Thread` / `multiprocessing.Process` with traced `args`,
    `joblib.Parallel(n_jobs=...)(joblib.delayed(f)(x) for ...)`, a manager's shared dict or
    list (`Manager().dict()`: `shared[key] = x`, `update`, `setdefault`, `append`, `extend`,
    `insert`; made in the traced function or bound once by a top-level statement), a Dask
    `Client`'s `submit` / `map` / `scatter`, `ray.put`, `f.remote(x)` of a module-level
    function decorated `@ray.remote` (or bound to `ray.remote(f)`), `dask.delayed(f)(x)`,
    and `threading.Timer(t, f, args=(x,))`. A pool's work may also
    carry the traced value itself: a lambda that reads a traced parameter or local of the
    function around it (`pool.map(lambda op: op(image), ops)`).

    The receiver must be known to come from `multiprocessing`, `concurrent.futures` or
    `joblib`: made by their constructor in the traced function (`p = Pool()`,
    `with ProcessPoolExecutor() as ex:`, `a, b = Pipe()`, `get_context("spawn").Pool()`,
    `Manager().Queue()`), given as a parameter by every call of its function (whose name
    the file only ever calls), or at module level: a pool or executor that a top-level statement
    binds once to a name (`POOL = ThreadPoolExecutor(2)`) for every method, anything else
    for every method but `map` and `apply` (names too common in JAX code, `jax.tree.map` and
    flax's `model.apply`, to look for on any receiver).
    A `put` on a receiver of unknown origin is JF103's (`leak-in-traced`).

    ## Why is this bad?
    Inside a trace an array is a `Tracer`: an abstract value with a shape and a dtype but no
    data. Sending one to another process pickles it, which raises
    `jax.errors.ConcretizationTypeError` ("The error occurred in the `__reduce__` method");
    `joblib` raises `PicklingError`, and a `multiprocessing.Queue` fails in its background
    feeder thread, so nothing is raised and the value never arrives. A thread (a
    `ThreadPoolExecutor`, `prefer="threads"`) that computes with a tracer raises
    `UnexpectedTracerError`, and a `threading.Thread` or a forked `Process` only prints or
    drops its error: the work silently never happens. `Pool.map` over a traced array
    can hang, its task thread failing while it iterates over the tracer.

    ## Example
    ```python
    @jax.jit
    def features(x):
        with concurrent.futures.ProcessPoolExecutor() as ex:
            rows = list(ex.map(expensive, x))
        return jnp.stack(rows)
    ```

    ## Use instead
    ```python
    @jax.jit
    def features(x):
        return jax.vmap(expensive)(x)
    ```
    When `expensive` is not JAX code, run the pool before or after the traced function, or
    call it through `jax.pure_callback(run_pool, jax.ShapeDtypeStruct(x.shape, x.dtype), x)`,
    which hands it NumPy arrays. A value sent to a queue can go through
    `jax.debug.callback(q.put, x)`. Pool work on concrete values outside traced code, on
    static arguments (`x.shape`) and `joblib.Parallel` with `n_jobs=1` (it runs in the
    calling thread) are not reported.

    ## Fix safety
    Unsafe. The work of a `multiprocessing` pool or a `concurrent.futures` executor runs in
    the trace, one call after another, and the pool is no longer made: `pool.map(f, xs)`
    becomes `list(map(f, xs))` (`ex.map` becomes `map`, as it gave an iterator), `starmap`
    `list(itertools.starmap(f, xs))`, `apply(f, (x,))` and `ex.submit(f, x).result()` become
    `f(x)`. The values are those the pool gave. Only work that is JAX code is moved: a `jax`
    function, or a function of the module that calls only `jax` functions, NumPy functions
    that run on a `jax.Array` (`np.sum`), methods of its own values (not `.item()` /
    `.tolist()`), pure built-ins and other such functions, and stores nothing outside itself
    (host work such as `float(v)`, a file, a log or a database would fail in the trace or run
    once per trace; the message names it). Work that calls its item
    (`pool.map(lambda op: op(x), ops)`) is JAX code when the items are: a tuple or list
    display of JAX functions, or a name bound once to one (a list read nowhere else). A
    NumPy conversion in the work that JF104 rewrites (`np.asarray` to `jax.numpy.asarray`)
    is rewritten first, and the pool's work moves in the next round of the same `apply`. A
    pool made by `with Pool() as pool:` is removed with its block when nothing else uses it,
    one made inline (`Pool().map(...)`) with the call.
    `joblib.Parallel(n_jobs=2)(joblib.delayed(f)(x) for x in xs)` becomes
    `[f(x) for x in xs]`, the list `Parallel` returns, in its order, when `f` is such JAX
    code and the `Parallel` returns a list (not `return_as="generator"`). Any other pool
    (assigned and shut down later, made by a project's constructor), queues, pipes, threads,
    processes and `joblib` running host work have no fix: whether the work can be vmapped,
    moved out of the trace or wrapped in a callback depends on what it does.

    ## References
    - https://docs.jax.dev/en/latest/errors.html#jax.errors.ConcretizationTypeError
    - https://docs.jax.dev/en/latest/errors.html#jax.errors.UnexpectedTracerError
    - https://docs.jax.dev/en/latest/external-callbacks.html
    """

    code = "JF105"
    name = "parallel-in-traced"
    summary = "Host processes, threads or queues given traced values inside traced code"
    message = "`{call}` hands a traced value to {where} inside `{function}` ({reason}): {why}"
    fix_title = "Run the pool's work in the trace, one call after another"
    fix_safety = FixSafety.UNSAFE
    unfixed = (
        "queues, pipes, threads, processes, `joblib`, and pools that outlive one block or run "
        "host work: whether the work can be vmapped or moved out depends on what it does"
    )
    anchors_receive_traced = False  # the pool made in traced code, not its `map`, is anchored
    sinks = SINKS
    anchors = (
        names_of(SINKS, SinkKind.PARALLEL)
        | frozenset(FACTORY_METHODS)
        | RARE_METHODS
        | {"Process", PARALLEL, DELAYED, REMOTE}
        | {BOUND + name for name in BOUND_MAKERS | BOUND_SHARED}
    )

    def visit_Call(self, node: cst.Call) -> None:
        context = self.traced.context_of(node)
        if context is None:
            return
        found = (
            self._method_call(node)
            or self._spawn(node)
            or self._parallel(node)
            or self._sent(node)
            or self._task(node)
        )
        if found is None:
            return
        self._report(node, node.func, context, found)

    def visit_Assign(self, node: cst.Assign) -> None:
        """`shared[key] = value` into a manager's shared dict or list."""
        context = self.traced.context_of(node)
        target = node.targets[0].target if len(node.targets) == 1 else None
        if context is None or not isinstance(target, cst.Subscript):
            return
        made = self._made(target.value, node)
        if made is None or made[0] is not Kind.SHARED:
            return
        if not (
            self._made_here(made[1], node)
            or self._made_at_top(made[1])
            or self._passed(target.value)
        ):
            return
        shown = cst.Subscript(target.value, [cst.SubscriptElement(cst.Index(cst.Ellipsis()))])
        self._report(node, shown, context, (Kind.SHARED, [node.value]))

    def _report(
        self,
        node: cst.Call | cst.Assign,
        shown: cst.BaseExpression,
        context: TracedFunction,
        found: Found,
    ) -> None:
        """Report `found` at `node` when it sends a traced value (with a fix for a pool)."""
        kind, payloads = found
        if not any(self.traced.is_traced(p) for p in payloads) and not (
            kind in (Kind.PROCESSES, Kind.THREADS)
            and isinstance(node, cst.Call)
            and self._closes_over_traced(node)
        ):
            return
        message = self.message.format(
            call=source_of(shown),
            where=kind.value,
            function=context.label,
            reason=context.reasons[0],
            why=WHY[kind],
        )
        pool = kind in (Kind.PROCESSES, Kind.THREADS) and isinstance(node, cst.Call)
        fix = self._fix(node) if pool and isinstance(node, cst.Call) else None
        hint = HINTS[kind]
        if fix is None and pool and isinstance(node, cst.Call):
            hint += self._why_not_traceable(node)
        self.report(node, f"{message}; {hint}", fix)

    def _why_not_traceable(self, call: cst.Call) -> str:
        """Why the pool's work cannot run in the trace, for the message ("" when it could, or
        when the work is not seen)."""
        if isinstance(call.func, cst.Attribute):
            work = [a.value for a in call.args if a.keyword is None][:1]
            why = self._host_work(call) if work else None
        else:
            work = [
                task.func.args[0].value
                for task in calls_in(call.args[0].value if call.args else call.func)
                if isinstance(task.func, cst.Call)
                and self.qualified_names(task.func.func) & {DELAYED}
                and task.func.args
            ][:1]
            why = self.traced.host_work(work[0]) if work else None
        if why is None:
            return ""
        return f" (not rewritten: `{source_of(work[0])}` cannot run in the trace: {why})"

    # ----- the fix: the work in the trace, one call after another ---------------------------

    def _fix(self, call: cst.Call) -> Fix | None:
        """The pool call, and with it the pool: inline (`Pool(2).map(f, xs)`) or the `with`
        block that makes it, when every use of the pool in the block can be rewritten."""
        func = call.func
        if not isinstance(func, cst.Attribute):
            return self._joblib_fix(call)
        if isinstance(func.value, cst.Call):
            rewrite = self._sequential(call, func.value)
            if rewrite is None:
                return None
            return self._made_fix({rewrite.original: rewrite.new}, func.value, rewrite)
        block = self._with_block(func.value)
        if block is None:
            return None
        if block not in self._block_fixes:
            self._block_fixes[block] = self._block_fix(block)
        return self._block_fixes[block]

    def _joblib_fix(self, call: cst.Call) -> Fix | None:
        """`Parallel(n_jobs=2)(delayed(f)(x) for x in xs)` -> `[f(x) for x in xs]`: the list
        joblib returns, in its order, each task run in the trace as `n_jobs=1` runs it."""
        maker = self._parallel_maker(call.func)
        if maker is None or not _returns_list(maker) or len(call.args) != 1:
            return None
        tasks = call.args[0]
        comprehension = tasks.value
        if (
            tasks.keyword is not None
            or tasks.star
            or not isinstance(comprehension, cst.GeneratorExp | cst.ListComp)
        ):
            return None
        if _asynchronous(comprehension.for_in):
            return None
        task = comprehension.elt
        if not (isinstance(task, cst.Call) and isinstance(task.func, cst.Call)):
            return None
        delayed = task.func
        if not self.qualified_names(delayed.func) & {DELAYED} or len(delayed.args) != 1:
            return None
        f = delayed.args[0]
        if f.keyword is not None or f.star or not self.traced.is_jax_code(f.value):
            return None
        function = f.value
        if not isinstance(function, cst.Name | cst.Attribute | cst.Call | cst.Subscript):
            function = function.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
        run = task.with_changes(func=function)  # `(lambda r: r.max())(r)`
        new = cst.ListComp(elt=run, for_in=comprehension.for_in, lpar=call.lpar, rpar=call.rpar)
        return self.make_fix({call: new}, removed_nodes=[call])

    def _made_fix(
        self,
        replacements: Mapping[cst.CSTNode, cst.CSTNode | cst.FlattenSentinel[cst.BaseStatement]],
        maker: cst.BaseExpression,
        *rewrites: Rewrite,
    ) -> Fix:
        """The fix, which drops the pool's constructor (and its import, if now unused)."""
        imports = tuple(dict.fromkeys(i for r in rewrites for i in r.imports))
        return self.make_fix(replacements, imports, removed_nodes=[maker])

    def _block_fix(self, block: cst.With) -> Fix | None:
        """`with Pool() as pool: body` -> `body`, each use of `pool` rewritten."""
        item = block.items[0]
        assert item.asname is not None and isinstance(item.asname.name, cst.Name)
        name = item.asname.name
        scope = self.traced.scope_of(name)
        bindings = [a for a in scope[name.value] if isinstance(a, Assignment)] if scope else []
        if len(bindings) != 1:
            return None
        rewrites: list[Rewrite] = []
        for reference in bindings[0].references:
            use = self.traced.parent(reference.node)
            call = self.traced.parent(use) if use is not None else None
            if not (
                isinstance(use, cst.Attribute)
                and use.value is reference.node
                and isinstance(call, cst.Call)
                and call.func is use
                and self.traced.inside(call, block.body)
            ):
                return None
            rewrite = self._sequential(call, item.item)
            if rewrite is None:
                return None
            rewrites.append(rewrite)
        body = block.body.visit(ReplaceNodes({r.original: r.new for r in rewrites}))
        if not isinstance(body, cst.IndentedBlock) or any(line.comment for line in body.footer):
            return None  # comments after the last statement have nowhere to go
        statements = list(body.body)
        first = statements[0]
        assert isinstance(first, cst.SimpleStatementLine | cst.BaseCompoundStatement)
        # The comments above the `with` and on its line go above what was its first statement.
        said = body.header.comment
        on_with = [cst.EmptyLine(comment=said)] if said is not None else []
        statements[0] = first.with_changes(
            leading_lines=[*block.leading_lines, *on_with, *first.leading_lines]
        )
        return self._made_fix({block: cst.FlattenSentinel(statements)}, item.item, *rewrites)

    def _with_block(self, receiver: cst.BaseExpression) -> cst.With | None:
        """The `with maker as receiver:` (its only item) that binds the name `receiver`."""
        if not isinstance(receiver, cst.Name):
            return None
        scope = self.traced.scope_of(receiver)
        bindings = [a for a in scope[receiver.value] if isinstance(a, Assignment)] if scope else []
        if len(bindings) != 1:
            return None
        alias = self.traced.parent(bindings[0].node)
        item = self.traced.parent(alias) if isinstance(alias, cst.AsName) else None
        block = self.traced.parent(item) if isinstance(item, cst.WithItem) else None
        if not isinstance(block, cst.With) or block.asynchronous or len(block.items) != 1:
            return None
        return block

    def _sequential(self, call: cst.Call, maker: cst.BaseExpression) -> Rewrite | None:
        """`call` (a method of the pool `maker` makes) run in the trace, one call after
        another."""
        family = self._family(maker)
        func = call.func
        if family is None or not isinstance(func, cst.Attribute):
            return None
        how = SEQUENTIAL[family].get(func.attr.value)
        if how is None or any(a.star for a in call.args):
            return None
        positional = [a for a in call.args if a.keyword is None]
        keywords = [a for a in call.args if a.keyword is not None]
        allowed = how.dropped | (APPLY_KEYWORDS if how.template == APPLY else frozenset())
        if not positional or any(k.keyword and k.keyword.value not in allowed for k in keywords):
            return None
        original = call
        if how.taken_by is not None:
            taken = self.traced.parent(call)
            waits = self.traced.parent(taken) if taken is not None else None
            if not (
                isinstance(taken, cst.Attribute)
                and taken.attr.value == how.taken_by
                and isinstance(waits, cst.Call)
                and waits.func is taken
                and not waits.args
            ):
                return None
            original = waits
        if self._host_work(call) is not None:
            return None
        f = source_of(positional[0].value)
        rest = [source_of(a.value) for a in positional[1:]]
        code = how.template.format(
            f=f, args=", ".join(rest), call=_applied(positional[1:], keywords)
        )
        imports = (ImportNeeded("itertools"),) if "itertools." in code else ()
        new = cst.parse_expression(code)
        return Rewrite(original, new.with_changes(lpar=original.lpar, rpar=original.rpar), imports)

    def _host_work(self, call: cst.Call) -> str | None:
        """Why the work `call` hands to its pool cannot run in the trace (None when it can): the
        function is not JAX code, or calls its item (`pool.map(lambda op: op(x), ops)`) and
        the items are not all JAX functions."""
        positional = [a.value for a in call.args if a.keyword is None]
        if not positional:
            return "the pool's work is not given by position"
        work = positional[0]
        why = self.traced.host_work(work)
        if why is None:
            return None
        parameter = self._item_parameter(call)
        if parameter is None or self.traced.host_work(work, calling=[parameter]) is not None:
            return why
        if not self._jax_functions(positional[1]):
            return (
                f"it calls each item (`{parameter}`), and the items are not all known to be"
                " JAX functions"
            )
        return None

    def _item_parameter(self, call: cst.Call) -> str | None:
        """The parameter of the work of `pool.map(work, items)` (one iterable) that takes each
        item, when the work is a lambda or a `def` of the module with one parameter."""
        func = call.func
        positional = [a.value for a in call.args if a.keyword is None]
        if not isinstance(func, cst.Attribute) or func.attr.value not in ITEM_METHODS:
            return None
        if len(positional) != 2:
            return None
        work = positional[0]
        node = (
            work
            if isinstance(work, cst.Lambda)
            else self.traced.function_of_name(work)
            if isinstance(work, cst.Name)
            else None
        )
        if node is None:
            return None
        params = list(parameters(node))
        if len(params) != 1 or params[0] is not next(iter(node.params.params), None):
            return None
        return params[0].name.value

    def _jax_functions(self, items: cst.BaseExpression) -> bool:
        """`items` is a tuple or list display of JAX functions (`[jnp.fliplr, jnp.flipud]`),
        or a name bound once to one that nothing else reads (a list could grow)."""
        if isinstance(items, cst.Name):
            assignments = self.traced.assignments(items)
            if len(assignments) != 1:
                return False
            (assignment,) = assignments
            value = self._binding_value(assignment.node)
            if isinstance(value, cst.List) and any(
                r.node is not items for r in assignment.references
            ):
                return False
            if value is None:
                return False
            items = value
        if not isinstance(items, cst.List | cst.Tuple) or not items.elements:
            return False
        return all(
            isinstance(e, cst.Element) and self.traced.is_jax_code(e.value) for e in items.elements
        )

    def _family(self, maker: cst.BaseExpression) -> Family | None:
        """Whose pool `maker` (a constructor call) makes: `multiprocessing`'s (also through a
        context) or `concurrent.futures`'; None for a project's own."""
        if not isinstance(maker, cst.Call):
            return None
        names = self.qualified_names(maker.func)
        for family in Family:
            if any(n.startswith(family.value + ".") for n in names):
                return family
        func = maker.func
        if (
            isinstance(func, cst.Attribute)
            and func.attr.value == "Pool"
            and self._factory(func.value)
        ):
            return Family.POOL
        return None

    # ----- what the call is -------------------------------------------------------------------

    def _method_call(self, call: cst.Call) -> Found | None:
        """`p.map(f, xs)`, `ex.submit(f, x)`, `q.put(x)`, `conn.send(x)` on a known receiver."""
        func = call.func
        if not isinstance(func, cst.Attribute):
            return None
        method = func.attr.value
        made = self._made(func.value, call)
        if made is None:
            return None
        kind, maker = made
        if method not in METHODS.get(kind, ()):
            return None
        if method not in RARE_METHODS and not (
            self._made_here(maker, call) or self._made_at_top(maker) or self._passed(func.value)
        ):
            return None  # only these put the call in the analysed slice
        if kind in (Kind.QUEUE, Kind.CONNECTION):
            return kind, _argument(call, 0, "obj")
        if kind is Kind.SHARED or (kind is Kind.CLUSTER and method == "scatter"):
            return kind, [a.value for a in call.args]
        given = [a.value for a in call.args if a.keyword is None]
        keywords = [
            a.value for a in call.args if a.keyword is not None and a.keyword.value not in NOT_SENT
        ]
        return kind, given[1:] + keywords

    def _passed(self, receiver: cst.BaseExpression) -> bool:
        """`receiver` is a parameter the calls of its function give what made it (see
        `_given_to`): `candidates.BOUND` anchors it too."""
        return isinstance(receiver, cst.Name) and self._parameter_of(receiver) is not None

    def _made_here(self, maker: cst.Call, call: cst.CSTNode) -> bool:
        """The constructor runs in traced code and in the same module-level statement."""
        return self.traced.context_of(maker) is not None and (
            _top_level(self, maker) is _top_level(self, call)
        )

    def _made_at_top(self, maker: cst.Call) -> bool:
        """`name = Pool(...)`, a top-level statement, with a constructor of `BOUND_MAKERS`, or
        `name = Manager().dict()` (`BOUND_SHARED`)."""
        assign = self.traced.parent(maker)
        if not isinstance(assign, cst.Assign) or not self.traced.at_top_level(assign):
            return False
        func = maker.func
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Call):
            made = {f"{n}().{func.attr.value}" for n in self.qualified_names(func.value.func)}
            return bool(made & BOUND_SHARED)
        return bool(self.qualified_names(maker.func) & BOUND_MAKERS)

    def _sent(self, call: cst.Call) -> Found | None:
        """`ray.put(x)`: a function that sends what it is given."""
        if self._kind_of_name(call.func) is not Kind.RAY:
            return None
        return Kind.RAY, [a.value for a in call.args]

    def _task(self, call: cst.Call) -> Found | None:
        """`f.remote(x)` for a function decorated `@ray.remote` (or `ray.remote(...)`, or a
        name bound once to `ray.remote(f)`), and `dask.delayed(f)(x)`: the arguments go to
        the task."""
        func = call.func
        if isinstance(func, cst.Call) and self._kind_of_name(func.func) is Kind.DELAYED:
            return Kind.DELAYED, [a.value for a in call.args]
        if not (
            isinstance(func, cst.Attribute)
            and func.attr.value == REMOTE
            and isinstance(func.value, cst.Name)
        ):
            return None
        if any(not isinstance(a.scope, GlobalScope) for a in self.traced.assignments(func.value)):
            return None  # a local name, not the module's function
        makers = self.traced.top_level_makers(func.value.value)
        if any(self._constructors.get(name) is Kind.REMOTE for name in makers):
            return Kind.REMOTE, [a.value for a in call.args]
        return None

    def _spawn(self, call: cst.Call) -> Found | None:
        """`threading.Thread(target=f, args=(x,))`, `mp.Process(...)`, `ctx.Process(...)`."""
        kind = self._kind_of_name(call.func)
        if kind not in SPAWNED:
            kind = None
        func = call.func
        if (
            kind is None
            and isinstance(func, cst.Attribute)
            and func.attr.value == "Process"
            and self._factory(func.value)
        ):
            kind = Kind.PROCESS
        if kind is None:
            return None
        payloads: list[cst.BaseExpression] = []
        timer = TIMER in self.qualified_names(func)
        for keyword, position in (TIMER_ARGUMENTS if timer else SPAWNER_ARGUMENTS).items():
            payloads += _argument(call, position, keyword)
        return kind, payloads

    def _parallel(self, call: cst.Call) -> Found | None:
        """`joblib.Parallel(n_jobs=2)(joblib.delayed(f)(x) for ...)`, also through a name."""
        maker = self._parallel_maker(call.func)
        if maker is None or not _runs_in_parallel(maker):
            return None
        tasks = [a.value for a in call.args if a.keyword is None][:1]
        if not tasks or not any(
            self.qualified_names(inner.func) & {DELAYED} for inner in calls_in(tasks[0])
        ):
            return None
        threads = any(
            a.keyword is not None
            and a.keyword.value in {"prefer", "backend"}
            and isinstance(a.value, cst.SimpleString)
            and a.value.evaluated_value in {"threads", "threading"}
            for a in maker.args
        )
        return (Kind.THREADS if threads else Kind.PROCESSES), tasks

    def _parallel_maker(self, func: cst.BaseExpression) -> cst.Call | None:
        if isinstance(func, cst.Call):
            return func if PARALLEL in self.qualified_names(func.func) else None
        if not isinstance(func, cst.Name):
            return None
        values = self._bound_values(func)
        if len(values) != 1 or not isinstance(values[0], cst.Call):
            return None
        value = values[0]
        return value if PARALLEL in self.qualified_names(value.func) else None

    def _closes_over_traced(self, call: cst.Call) -> bool:
        """The pool's work is a lambda that reads a traced value of the function around it
        (`pool.map(lambda op: op(image), ops)`): the worker computes with that tracer."""
        given = [a.value for a in call.args if a.keyword is None][:1]
        work = given or _argument(call, -1, "func") or _argument(call, -1, "fn")
        context = self.traced.context_of(call)
        if context is None:
            return False
        for name in (n for w in work for n in _captured(w)):
            scope = self.traced.scope_of(name)
            bindings = [a for a in scope[name.value] if isinstance(a, Assignment)] if scope else []
            if any(self._traced_binding(a.node, context) for a in bindings):
                return True
        return False

    def _traced_binding(self, target: cst.CSTNode, context: TracedFunction) -> bool:
        """`target` binds a traced value: a traced parameter of `context`, or a name assigned
        a traced value."""
        if isinstance(target, cst.Param):
            own = any(p is target for p in parameters(context.node))
            return own and target.name.value in context.traced_params
        value = self._binding_value(target)
        return value is not None and self.traced.is_traced(value)

    # ----- where a receiver comes from --------------------------------------------------------

    def _made(
        self, receiver: cst.BaseExpression, site: cst.CSTNode, depth: int = 0
    ) -> tuple[Kind, cst.Call] | None:
        """What made `receiver`, and the constructor call: `Pool(2)` itself, the one call
        every binding of the name `receiver` comes from, or for a parameter what made the
        object every call of its function gives it (`_given_to`)."""
        if isinstance(receiver, cst.Call):
            kind = self._made_by(receiver)
            return (kind, receiver) if kind is not None and kind is not Kind.FACTORY else None
        if not isinstance(receiver, cst.Name):
            return None
        if self._parameter_of(receiver) is not None:
            return self._given_to(receiver) if depth == 0 else None
        values = self._bound_values(receiver)
        if len(values) != 1 or not isinstance(values[0], cst.Call):
            return None
        kind = self._made_by(values[0])
        if kind is None or kind is Kind.FACTORY:
            return None
        return kind, values[0]

    def _parameter_of(self, name: cst.Name) -> tuple[cst.FunctionDef, cst.Param] | None:
        """The module-level or nested function (not a method) whose parameter the name
        `name` reads, its only binding, and the parameter."""
        scope = self.traced.scope_of(name)
        if scope is None:
            return None
        assignments = [a for a in scope[name.value] if isinstance(a, Assignment)]
        if len(assignments) != 1 or not isinstance(assignments[0].node, cst.Param):
            return None
        param = assignments[0].node
        function = self.traced.parent(self.traced.parent(param) or param)
        if not isinstance(function, cst.FunctionDef) or isinstance(
            self.traced.parent(self.traced.parent(function) or function), cst.ClassDef
        ):
            return None
        return function, param

    def _given_to(self, name: cst.Name) -> tuple[Kind, cst.Call] | None:
        """What made the object each call of the function gives the parameter `name` reads
        (`make_model(shared)` with `shared = manager.dict()`), when every call gives it one of
        the same kind and the function's name is only ever called (not handed on, where
        unknown code may call it with anything); the first call's constructor. Followed
        through one function: a call giving its own parameter gives nothing known."""
        found = self._parameter_of(name)
        if found is None:
            return None
        function, param = found
        params = function.params
        positional = [*params.posonly_params, *params.params]
        position = next((i for i, p in enumerate(positional) if p is param), None)
        if position is None and not any(p is param for p in params.kwonly_params):
            return None  # `*args`, `**kwargs`
        made: tuple[Kind, cst.Call] | None = None
        uses = self._calls_of(function)
        if not uses or self.traced.calls_only(function.name.value) != len(uses):
            return None  # handed on, bound again, or called where the slice does not show
        for use in uses:
            call = self.traced.parent(use)
            if not isinstance(call, cst.Call) or call.func is not use:
                return None
            given = _argument(call, -1 if position is None else position, param.name.value)
            if not given or any(a.star for a in call.args):
                return None
            kind = self._made(given[0], call, depth=1)
            if kind is None or (made is not None and kind[0] is not made[0]):
                return None
            made = made or kind
        return made

    def _calls_of(self, function: cst.FunctionDef) -> list[cst.CSTNode]:
        """The reads of the name `function`'s `def` binds."""
        scope = self.traced.scope_of(function)
        if scope is None:
            return []
        for assignment in scope.assignments[function.name.value]:
            if isinstance(assignment, Assignment) and assignment.node is function:
                return [access.node for access in assignment.references]
        return []

    def _made_by(self, call: cst.Call) -> Kind | None:
        """The kind of what `call` constructs, when it is a known constructor."""
        kind = self._kind_of_name(call.func)
        if kind is not None and kind not in SPAWNED:
            return kind
        func = call.func
        if (
            isinstance(func, cst.Attribute)
            and func.attr.value in FACTORY_METHODS
            and self._factory(func.value)
        ):
            return FACTORY_METHODS[func.attr.value]
        return None

    def _factory(self, expr: cst.BaseExpression) -> bool:
        """`mp.get_context(...)` / `mp.Manager()`, or a name bound only to one of them."""
        if isinstance(expr, cst.Name):
            values = self._bound_values(expr)
            if len(values) != 1:
                return False
            expr = values[0]
        if not isinstance(expr, cst.Call):
            return False
        if self._kind_of_name(expr.func) is Kind.FACTORY:
            return True
        func = expr.func  # `get_context("fork").Manager()`
        return (
            isinstance(func, cst.Attribute)
            and func.attr.value == "Manager"
            and (self._factory(func.value))
        )

    def prepare(self) -> None:
        """What each constructor makes, the project's (worker processes unless built in) too;
        the fixes of the `with` blocks seen so far."""
        self._block_fixes: dict[cst.With, Fix | None] = {}
        self._constructors = {
            row.callable: Kind[row.detail] if row.detail else Kind.PROCESSES
            for row in self.sink_rows(SinkKind.PARALLEL)
        }

    def _kind_of_name(self, func: cst.BaseExpression) -> Kind | None:
        """What the constructor `func` names makes, when it is one."""
        for name in sorted(self.qualified_names(func)):
            if name in self._constructors:
                return self._constructors[name]
        return None

    def _bound_values(self, name: cst.Name) -> list[cst.BaseExpression]:
        """The values a name is bound to: `n = value`, `n: T = value`, `with value as n`,
        `a, n = Pipe()` (the whole value); empty when one binding is of another form (a
        parameter, a loop target, an import)."""
        scope = self.traced.scope_of(name)
        if scope is None:
            return []
        assignments = [a for a in scope[name.value] if isinstance(a, Assignment)]
        values: list[cst.BaseExpression] = []
        for assignment in assignments:
            value = self._binding_value(assignment.node)
            if value is None:
                return []
            values.append(value)
        return values

    def _binding_value(self, target: cst.CSTNode) -> cst.BaseExpression | None:
        parent = self.traced.parent(target)
        if isinstance(parent, cst.AsName):
            item = self.traced.parent(parent)
            return item.item if isinstance(item, cst.WithItem) else None
        if isinstance(parent, cst.AnnAssign):
            return parent.value if parent.target is target else None
        unpacked = False
        while isinstance(parent, cst.Element | cst.Tuple | cst.List):
            unpacked = True
            parent = self.traced.parent(parent)
        if not isinstance(parent, cst.AssignTarget):
            return None
        assign = self.traced.parent(parent)
        if not isinstance(assign, cst.Assign) or len(assign.targets) != 1:
            return None
        if unpacked and not (
            isinstance(assign.value, cst.Call) and self._made_by(assign.value) is Kind.CONNECTION
        ):
            return None  # only `a, b = Pipe()` unpacks into what it constructs
        return assign.value


def _applied(positional: list[cst.Arg], keywords: list[cst.Arg]) -> str:
    """The arguments of `f` for `pool.apply(f, args, kwds)`: a tuple literal's elements,
    else `*args`; a dict of `**kwds`."""
    given = {k.keyword.value: k.value for k in keywords if k.keyword is not None}
    args = positional[0].value if positional else given.get("args")
    kwds = positional[1].value if len(positional) > 1 else given.get("kwds")
    parts: list[str] = []
    if isinstance(args, cst.Tuple):
        parts += [source_of(e.value) for e in args.elements]
    elif args is not None:
        parts.append(f"*{source_of(args)}")
    if kwds is not None:
        parts.append(f"**{source_of(kwds)}")
    return ", ".join(parts)


def _top_level(rule: ParallelInTraced, node: cst.CSTNode) -> cst.CSTNode:
    """The module-level statement holding `node`."""
    while True:
        parent = rule.traced.parent(node)
        if parent is None or isinstance(parent, cst.Module):
            return node
        node = parent


def _runs_in_parallel(maker: cst.Call) -> bool:
    """`Parallel(n_jobs=...)` with a number of jobs other than 1 or None (the default runs
    the tasks one after the other in the calling thread, where tracers work)."""
    jobs = _argument(maker, 0, "n_jobs")
    if not jobs:
        return False
    value = jobs[0]
    if isinstance(value, cst.Integer) and value.evaluated_value == 1:
        return False
    return not (isinstance(value, cst.Name) and value.value == "None")


# `Parallel` options that leave its result a list of the tasks' results, in their order.
LIST_OPTIONS = frozenset(
    {"n_jobs", "backend", "verbose", "timeout", "pre_dispatch", "batch_size", "temp_folder"}
    | {"max_nbytes", "mmap_mode", "prefer", "require"}
)


def _returns_list(maker: cst.Call) -> bool:
    """`Parallel(...)` returns a list (not a generator, `return_as=...`): its positional
    arguments are `n_jobs` and `backend` at most, its keywords those of `LIST_OPTIONS`."""
    for index, arg in enumerate(maker.args):
        if arg.star or (arg.keyword is None and index > 1):
            return False
        keyword = arg.keyword.value if arg.keyword is not None else None
        as_list = keyword == "return_as" and _is_string(arg.value, "list")
        if keyword is not None and keyword not in LIST_OPTIONS and not as_list:
            return False
    return True


def _is_string(value: cst.BaseExpression, text: str) -> bool:
    return isinstance(value, cst.SimpleString) and value.evaluated_value == text


def _asynchronous(for_in: cst.CompFor) -> bool:
    """Any `async for` in a comprehension (its tasks are awaited: not a plain list)."""
    current: cst.CompFor | None = for_in
    while current is not None:
        if current.asynchronous is not None:
            return True
        current = current.inner_for_in
    return False


def _captured(function: cst.BaseExpression) -> list[cst.Name]:
    """The names a lambda reads from around it (`image` in `lambda op: op(image)`): the pool
    runs it, and with it their values, in a worker."""
    if not isinstance(function, cst.Lambda):
        return []
    own = parameter_names(function)
    reads = _NameReads()
    function.body.visit(reads)
    return [n for n in reads.names if n.value not in own]


class _NameReads(cst.CSTVisitor):
    """The names an expression reads, less attribute and keyword names and nested lambdas."""

    def __init__(self) -> None:
        self.names: list[cst.Name] = []

    def visit_Name(self, node: cst.Name) -> None:
        self.names.append(node)

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        node.value.visit(self)
        return False

    def visit_Arg(self, node: cst.Arg) -> bool:
        node.value.visit(self)
        return False

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False

    def visit_CompFor(self, node: cst.CompFor) -> bool:
        return False


def _argument(call: cst.Call, position: int, keyword: str) -> list[cst.BaseExpression]:
    for index, arg in enumerate(call.args):
        if arg.star:
            return []
        if arg.keyword is None and index == position:
            return [arg.value]
        if arg.keyword is not None and arg.keyword.value == keyword:
            return [arg.value]
    return []


# `ParallelInTracedCommand`: this rule as a LibCST codemod (`python -m libcst.tool codemod`).
__getattr__, __dir__ = command_hooks(ParallelInTraced)
