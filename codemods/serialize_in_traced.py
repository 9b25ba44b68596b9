"""JF101 serialize-in-traced: pickling, dumping or saving a traced value inside traced code."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import ClassVar

import libcst as cst
from libcst.metadata import GlobalScope

from jaxfix.analysis.candidates import BOUND, MADE
from jaxfix.analysis.effects import Keys
from jaxfix.analysis.project import ReturnChange
from jaxfix.analysis.reasons import Via
from jaxfix.fixes.after_call_sites import rewrite_imported_sites
from jaxfix.fixes.call_sites import sole_binding
from jaxfix.fixes.fix import Fix
from jaxfix.fixes.hoist import gating_if, is_host_only_target
from jaxfix.fixes.host_effects import Hoists, wait_in_importers
from jaxfix.fixes.returns import DUMPS, returned
from jaxfix.fixes.syntax import calls_in, descendants, payload_of, source_of
from jaxfix.fixes.text_files import FILE_WRITERS, TEXT_FILES, opened_in_view
from jaxfix.fixes.tracing import Statement, TracedFunction
from jaxfix.models.diagnostic import FixSafety
from jaxfix.models.sinks import FIRST, Payload, Sink, SinkKind, names_of, rows
from jaxfix.rules.rule import Rule, command_hooks

# What a checkpointer's `save` writes.
SAVED = Payload(1, rest=True)


def _writers(row: Sink) -> list[str]:
    """The methods that write, of the object a checkpointer row makes."""
    return row.detail.split() or ["save"]


def _store_rows(makers: Sequence[str], writes: Sequence[tuple[str, Payload | None]]) -> list[Sink]:
    """The rows of objects that `makers` construct, whose methods (space-separated) write the
    argument beside them."""
    return [
        Sink(maker, SinkKind.CHECKPOINTER, payload, methods)
        for maker in makers
        for methods, payload in writes
    ]


REDIS = ("redis.Redis", "redis.StrictRedis", "redis.from_url", "redis.Redis.from_url")
# Host stores and caches, by the constructors that make them, with the methods that write and
# the argument each writes (`__setitem__`: the value of `store[key] = value`). diskcache and
# redis pickle or encode what they are given (`ConcretizationTypeError`, redis' `DataError`);
# h5py and zarr convert it to a NumPy array (`TracerArrayConversionError`).
STORES = (
    *_store_rows(
        ["diskcache.Cache", "diskcache.FanoutCache"],
        [("set add", Payload(1, "value")), ("push", Payload(0, "value")), ("__setitem__", None)],
    ),
    *_store_rows(
        ["diskcache.Index"],
        [("setdefault", Payload(1, "default")), ("push", Payload(0, "value"))],
    ),
    *_store_rows(["diskcache.Index"], [("__setitem__", None)]),
    *_store_rows(["diskcache.Deque"], [("append appendleft", Payload(0, "value"))]),
    *_store_rows(
        REDIS,
        [
            ("set getset setnx lpush rpush sadd", Payload(1, "value", rest=True)),
            ("setex psetex", Payload(2, "value")),
            ("hset hsetnx", Payload(2, "value")),
            ("publish", Payload(1, "message")),
        ],
    ),
    *_store_rows(
        ["h5py.File"],
        [("create_dataset", Payload(3, "data")), ("__setitem__", None)],
    ),
    *_store_rows(
        [f"zarr.{maker}" for maker in ("open", "open_array", "create", "zeros", "empty")],
        [("__setitem__", None)],
    ),
    *_store_rows(["zarr.open_group", "zarr.group"], [("create_dataset", Payload(3, "data"))]),
    # `pickle.Pickler(f).dump(obj)`.
    *_store_rows(["pickle.Pickler", "dill.Pickler", "cloudpickle.Pickler"], [("dump", FIRST)]),
)
# Methods named too commonly (`x.at[i].set(v)`, `xs.append(x)`) to look for on any receiver:
# they count only on an object that traced code makes, that one top-level statement binds
# to a name, or that a `with` around the traced function opens (`candidates.MADE`, `BOUND`).
COMMON_WRITERS = frozenset(
    {"set", "add", "push", "setdefault", "append", "appendleft", "getset", "setnx", "sadd"}
    | {"setex", "psetex", "hset", "hsetnx", "publish", "lpush", "rpush", "dump"}
)
STORE_MAKERS = frozenset(row.callable for row in STORES)

# Serializers, with the argument they serialize (`rest`: that one, every later one and every
# keyword argument); orbax checkpointers, whose `save(directory_or_step, ...)` writes every
# later argument.
SINKS = (
    *(
        Sink(name, SinkKind.SERIALIZE, Payload(0, keyword))
        for name, keyword in [
            ("pickle.dumps", "obj"),
            ("pickle.dump", "obj"),
            ("cloudpickle.dumps", "obj"),
            ("cloudpickle.dump", "obj"),
            ("dill.dumps", "obj"),
            ("dill.dump", "obj"),
            ("joblib.dump", "value"),
            ("marshal.dumps", "value"),
            ("marshal.dump", "value"),
            ("torch.save", "obj"),
            ("json.dumps", "obj"),
            ("json.dump", "obj"),
            ("flax.serialization.to_bytes", "target"),
            ("flax.serialization.msgpack_serialize", "pytree"),
            ("simplejson.dumps", "obj"),
            ("simplejson.dump", "obj"),
            ("ujson.dumps", "obj"),
            ("ujson.dump", "obj"),
            ("orjson.dumps", "__obj"),
            ("msgpack.packb", "o"),
            ("msgpack.pack", "o"),
            ("msgpack.dumps", "o"),
            ("msgpack.dump", "o"),
            ("yaml.dump", "data"),
            ("yaml.safe_dump", "data"),
            ("jsonpickle.encode", "value"),
            ("hickle.dump", "py_obj"),
            ("safetensors.numpy.save", "tensor_dict"),
            ("safetensors.numpy.save_file", "tensor_dict"),
            ("safetensors.flax.save", "tensors"),
            ("safetensors.flax.save_file", "tensors"),
            ("zarr.array", "data"),
        ]
    ),
    Sink("scipy.io.savemat", SinkKind.SERIALIZE, Payload(1, "mdict")),
    Sink("numpy.lib.format.write_array", SinkKind.SERIALIZE, Payload(1, "array")),
    Sink("flax.training.checkpoints.save_checkpoint", SinkKind.SERIALIZE, Payload(1, "target")),
    Sink("equinox.tree_serialise_leaves", SinkKind.SERIALIZE, Payload(1, "pytree")),
    Sink("zarr.save", SinkKind.SERIALIZE, Payload(1, rest=True)),
    Sink("zarr.save_array", SinkKind.SERIALIZE, Payload(1, "arr")),
    Sink("numpy.save", SinkKind.SERIALIZE, Payload(1, "arr")),
    Sink("numpy.savetxt", SinkKind.SERIALIZE, Payload(1, "X")),
    Sink("jax.numpy.save", SinkKind.SERIALIZE, Payload(1, "arr")),
    Sink("orbax.checkpoint.v1.save_pytree", SinkKind.SERIALIZE, Payload(1, "pytree")),
    *rows(
        SinkKind.SERIALIZE,
        ["numpy.savez", "numpy.savez_compressed", "jax.numpy.savez"],
        Payload(1, rest=True),
    ),
    *rows(
        SinkKind.CHECKPOINTER,
        [
            f"orbax.checkpoint.{name}"
            for name in (
                "Checkpointer",
                "AsyncCheckpointer",
                "StandardCheckpointer",
                "PyTreeCheckpointer",
                "CheckpointManager",
            )
        ],
        SAVED,
    ),
    # A database connection: `execute(sql, parameters)` writes the parameters.
    Sink("sqlite3.connect", SinkKind.CHECKPOINTER, Payload(1), "execute executemany"),
    # Stores and caches: a constructor's object, one row per argument its methods write.
    *STORES,
    # A shelf pickles what is stored in it: `db[key] = value` (`__setitem__`, no payload).
    Sink("shelve.open", SinkKind.CHECKPOINTER, None, "__setitem__"),
    # CSV writers write `str()` of each value: a tracer's is `JitTracer(float32[])`.
    *(
        Sink(name, SinkKind.CHECKPOINTER, Payload(0), "writerow writerows")
        for name in ("csv.DictWriter", "csv.writer")
    ),
    # A file opened for text writes what it is given: `f.write(f"{loss}\n")` of a tracer writes
    # `JitTracer(float32[])`, once, when the function is traced.
    *(
        Sink(name, SinkKind.CHECKPOINTER, Payload(0), "write writelines")
        for name in ("builtins.open", "io.open")
    ),
)
# Files (`TEXT_FILES`), whose writes take text: text made from a tracer (`f"{loss}"`,
# `str(loss)`, `"%s" % loss`) holds the tracer's name. `write` is too common a name to anchor on
# any receiver: the first pass looks where traced code opens a file, or where a top-level
# `LOG = open(...)` or a `with open(...) as log:` around a traced closure is written to (`MADE`,
# `BOUND`), and the rule reports only there (`jaxfix.fixes.text_files.opened_in_view`).
# Writers that write `str()` of what they are given, or text: the tracer's name, silently.
FORMATTING = TEXT_FILES | {"csv.DictWriter", "csv.writer"}
TO_TEXT = frozenset({"builtins.str", "builtins.repr", "builtins.format"})
# The methods of what a checkpointer row makes that write (`save` unless the row says).
WRITERS = frozenset(m for row in SINKS if row.kind is SinkKind.CHECKPOINTER for m in _writers(row))
# A checkpointer row whose object is written by item assignment (`db[key] = value`).
ITEM_STORE = "__setitem__"
STORES_ITEMS = frozenset(row.callable for row in SINKS if ITEM_STORE in _writers(row))
# Array methods that serialize their receiver.
SERIALIZING_METHODS = frozenset({"tobytes", "tofile", "dumps", "dump"})
# Sinks that no host callback fixes, with what to do instead: a SQLite connection works only
# in the thread that made it (a callback runs in another).
_AFTER = "return the value and {} `jax.device_get(out).tolist()` after the call"
UNFIXABLE = {
    "sqlite3.connect": _AFTER.format("write")
    + " (a SQLite connection works only in the thread that made it; a callback runs in another)",
    **dict.fromkeys(
        REDIS,
        "return the value and write the bytes of its host copy"
        " (`np.asarray(jax.device_get(out)).tobytes()`) after the call (redis takes bytes,"
        " strings and numbers only: no host copy of an array is one)",
    ),
}
# The detail of a `ReturnChange` that asks the modules calling a helper from traced code to move
# that call out of the trace (the helper serializes what it is given).
MOVES_CALL = "moves_call"
# With `MOVES_CALL`: what the helper writes (`Keys.plain`, None when not known).
WRITES = "writes"
# Sinks that take Python values only: a host copy (a NumPy array) is still no JSON value, so
# each of its leaves is given as a list or a Python scalar (`.tolist()`).
PYTHON_VALUES_ONLY = frozenset(
    {"json.dumps", "json.dump", "simplejson.dumps", "simplejson.dump", "ujson.dumps"}
    | {"ujson.dump", "orjson.dumps", "msgpack.packb", "msgpack.pack", "msgpack.dumps"}
    | {"msgpack.dump", "yaml.safe_dump"}
)
OPENERS = frozenset(
    {"builtins.open", "io.open", "gzip.open", "bz2.open", "lzma.open", "shelve.open", "h5py.File"}
)


class SerializeInTraced(Rule):
    """
    ## What it does
    Finds serialization and checkpointing (`pickle`, `cloudpickle`, `dill`, `joblib.dump`,
    `json`, `np.save`, `jnp.save`, `.tobytes()`, Flax `serialization.to_bytes` /
    `msgpack_serialize`, Orbax checkpointers' `save` and `ocp.v1.save_pytree`, a `sqlite3`
    connection's `execute` / `executemany` parameters, a `csv` writer's `writerow` /
    `writerows`, a file's `write` / `writelines` of text made from one (`f"{loss}"`,
    `str(loss)`; not of a file whose literal mode only reads, `open(p)`, `open(p, "rb")`), an
    item stored in a `shelve` shelf, host stores and caches written through the object their
    constructor makes (`diskcache.Cache` / `FanoutCache` / `Index` / `Deque`'s `set`, `add`,
    `push`, `cache[key] = value`; `redis.Redis`'s `set`, `hset`, `lpush`, `publish`;
    `h5py.File`'s `create_dataset(..., data=x)` and `f[key] = x`; `zarr` arrays' `z[...] = x`;
    `pickle.Pickler(f).dump(x)`), other serializers (`msgpack`, `yaml`, `simplejson`,
    `ujson`, `orjson`, `jsonpickle`, `hickle`, `safetensors`, `scipy.io.savemat`, `zarr.save`,
    Flax's `save_checkpoint`, Equinox's `tree_serialise_leaves`)) of a traced value inside a
    function that
    jax traces (`jit`, `grad`, `vmap`, `pmap`, `lax.scan` and loop bodies, `custom_vjp` rules,
    and the functions they call).

    ## Why is this bad?
    Inside a trace an array is a `Tracer`: an abstract value with a shape and a dtype but no
    data. Pickling one raises `jax.errors.ConcretizationTypeError` ("The error occurred in the
    `__reduce__` method, which may indicate an attempt to serialize/pickle a traced value."),
    NumPy's savers and Flax's msgpack serialization raise `TracerArrayConversionError`, Orbax
    raises `ValueError` ("TypeHandler lookup failed"), `json` raises `TypeError`, and
    `sqlite3` raises `ProgrammingError` ("type 'DynamicJaxprTracer' is not supported"). A CSV
    writer, or a file given `f"{loss}"`, raises nothing: it writes `JitTracer(float32[])`,
    once, when the function is traced.

    ## Example
    ```python
    @jax.jit
    def step(x):
        y = x * 2
        with open("y.pkl", "wb") as f:
            pickle.dump(y, f)
        return y + 1
    ```

    ## Use instead
    ```python
    @jax.jit
    def step(x):
        y = x * 2

        def _host_pickle_dump(y):
            with open("y.pkl", "wb") as f:
                pickle.dump(jax.device_get(y), f)

        jax.debug.callback(_host_pickle_dump, y, ordered=True)
        return y + 1
    ```
    Serialized bytes the function returns are reported by JF107 (`serialized-return`). When
    they are used by later traced code, there is no mechanical fix: return the array and
    serialize `jax.device_get(out)` after the call.

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
    *executes*, not when it is traced: once per call, once per element under `vmap` and once per
    iteration under `lax.scan`. `ordered=True` keeps the effects in program order, but
    transformations such as rematerialisation may repeat them. `jax.device_get` hands the
    serializer a NumPy array, so the file loads without jax.

    On a GPU or TPU the call returns before its callbacks have run. Where host code in the file
    reads what the statement writes (the file, by the name the call site gives; the variable or
    attribute it sets) after code that may run the function, the fix also puts
    `jax.effects_barrier()` before that first read, and its title says where. Later statements
    of the function that use what it writes (`os.replace(tmp, path)` after a dump into `tmp`)
    move into the same callback. When a read cannot be made to wait (it shares its statement
    with the call), a statement that must move cannot, or the file name comes from a call site
    the file does not show, there is no fix, unless the serialization is in a helper that
    traced code calls on one line, its value dropped (`save(params, path)` in a jitted step):
    then that call moves, as above, given host copies of the traced values, and the helper runs
    on the host. An `if` on traced values whose branches only change host state moves whole
    (`if int(step) % every == 0:` around the serialization: the test gets concrete values on
    the host). When the calling code is in other modules of the run, the finding in the
    helper's module is fixed by those moves, one fix over the files (all made or none; the
    host reads of what the helper writes, named by its strings and those the call gives it,
    wait for it). `json` (and the other serializers of Python values only: `msgpack`,
    `yaml.safe_dump`, ...) is given each leaf of the host copy as a
    list or a Python scalar (`.tolist()`: a NumPy array is no JSON value). `sqlite3` (a
    connection works only in the thread that made it, and a callback runs in another) and
    `redis` (it takes bytes, strings and numbers only) have no fix. A store method named as
    commonly as `set` or `add`, and `store[key] = value`, count only on an object made in
    traced code, bound once by a top-level statement, or opened by a `with` around the traced
    function.

    ## References
    - https://docs.jax.dev/en/latest/errors.html#jax.errors.ConcretizationTypeError
    - https://docs.jax.dev/en/latest/external-callbacks.html
    """

    code = "JF101"
    name = "serialize-in-traced"
    summary = "Pickling, saving or checkpointing a traced value inside traced code"
    message = "`{call}` serializes a traced value inside `{function}` ({reason})"
    fix_title = (
        "Return the traced values and serialize their host copies after each call, or move the"
        " serialization to a host callback (`jax.debug.callback`)"
    )
    hoist_title = "Move the serialization to a host callback (`jax.debug.callback`)"
    fix_safety = FixSafety.UNSAFE
    unfixed = (
        "`sqlite3` writes (a connection bound to its thread); `redis` writes (no array is a"
        " value it takes); a read "
        "of the file or state that cannot wait for the callback; a file named by a call site "
        "not in view"
    )
    after_call_title = "Return the traced values and serialize their host copies after each call"
    reads_users = True  # the call sites, where the serialization may move
    project_aware = True  # other modules' calls of a function whose statements move after them
    reads_after_calls = True  # the fix waits for the callback where host code reads its file
    sinks = SINKS
    anchors = (
        names_of(SINKS, SinkKind.SERIALIZE)
        | SERIALIZING_METHODS
        | WRITERS - {ITEM_STORE} - FILE_WRITERS - COMMON_WRITERS
        | {MADE + name for name in STORES_ITEMS | TEXT_FILES | STORE_MAKERS}
        | {BOUND + name for name in TEXT_FILES | STORES_ITEMS | STORE_MAKERS}
    )
    options: ClassVar[Mapping[str, str]] = {
        "extra-serializers": "The project's own functions that serialize or save their first"
        " argument (`my_lib.io.save_blob`); the same as `serialize` in `[tool.jaxfix.sinks]`."
    }

    def prepare(self) -> None:
        """The serializers and checkpointers, and the fixes made so far."""
        self._hoists = Hoists(self, self._movable, self._wrapping)
        self._serializers = {
            row.callable: row.payload for row in self.sink_rows(SinkKind.SERIALIZE)
        }
        self._checkpointers: dict[str, list[Sink]] = {}
        for row in self.sink_rows(SinkKind.CHECKPOINTER):
            self._checkpointers.setdefault(row.callable, []).append(row)
        # Helpers whose traced call moves out of the trace (`_helper_call_moved`): the line
        # of each call, and each helper's fix.
        self._helper_calls: set[Statement] = set()
        self._helper_moves: dict[cst.CSTNode, Fix | None] = {}
        self._published: set[cst.CSTNode] = set()  # helpers whose importers move their calls

    def leave_Module(self, original_node: cst.Module) -> None:
        self._move_imported_helper_calls()
        rewrite_imported_sites(self)  # the call sites of other modules' functions
        wait_in_importers(self)  # the reads after them of what their callbacks write

    def visit_Call(self, node: cst.Call) -> None:
        context = self.traced.context_of(node)
        if context is None:
            return
        found = self._serializer(node)
        if found is None:
            return
        call_name, sink, payloads = found
        given = self._formats_traced if sink in TEXT_FILES else self.traced.is_traced
        if not any(map(given, payloads)) or self._returned(node):
            return
        message = self.message.format(
            call=call_name, function=context.label, reason=context.reasons[0]
        )
        if sink in FORMATTING:
            message += ": it writes the tracer's name (`JitTracer(float32[])`), once, at tracing"
        if sink in UNFIXABLE:
            self.report(node, f"{message}; {UNFIXABLE[sink]}")
            return
        fix = self._hoist(node, call_name)
        if not isinstance(fix, Fix):
            fix = self._helper_call_moved(context) or self._moved_by_importers(context) or fix
        if not isinstance(fix, Fix):
            message += "; return the value and serialize `jax.device_get(out)` after the call"
            message += f" (no host callback: {fix})" if fix else ""
        self.report(node, message, fix if isinstance(fix, Fix) else None)

    def _helper_call_moved(self, helper: TracedFunction) -> Fix | None:
        """For a serialization in a helper that traced code only calls (`save(params, path)`
        alone on its line in a jitted step): the move of that call out of the trace, after
        the call of the step or into a host callback, with host copies of what it is given;
        the helper then runs on the host. None unless traced code calls it at one such line."""
        if helper.node in self._helper_moves:
            return self._helper_moves[helper.node]
        self._helper_moves[helper.node] = None
        node = helper.node
        if not isinstance(node, cst.FunctionDef) or any(
            reason.via is not Via.CALLED for reason in helper.reasons
        ):
            return None
        scope = self.traced.scope_of(node)
        binding = sole_binding(scope, node) if isinstance(scope, GlobalScope) else None
        if binding is None:
            return None
        statement = self._sole_traced_call_line([a.node for a in binding.references])
        if statement is None:
            return None
        self._helper_calls.add(statement)
        fix = self._hoists.fix(statement, "_host_" + helper.label)
        self._helper_moves[helper.node] = fix if isinstance(fix, Fix) else None
        return self._helper_moves[helper.node]

    def _moved_by_importers(self, helper: TracedFunction) -> Fix | str | None:
        """For a serialization in a helper that only other modules' traced code calls: the
        run hears that those calls move out of the trace (`MOVES_CALL`), and once every
        module calling it can move its call, the finding's fix is those moves (`moves`);
        else why not (None while the run has not answered)."""
        node = helper.node
        facts = self.traced.project.facts
        if (
            not isinstance(node, cst.FunctionDef)
            or any(reason.via is not Via.OTHER_MODULE for reason in helper.reasons)
            or not isinstance(self.traced.scope_of(node), GlobalScope)
        ):
            return None
        name = node.name.value
        if facts is not None and node not in self._published:
            self._published.add(node)
            body = [s for s in node.body.body if isinstance(s, Statement)]
            # What the helper writes, for the waits; where its code builds the names from
            # its parameters, every string it holds (the callers add those they give).
            keys = self.traced.effect_keys(body) or Keys(paths=frozenset(_strings_in(node)))
            details = ((MOVES_CALL, True), (WRITES, keys.plain()))
            facts.return_changes.append(ReturnChange(name, self.code, details))
        answer = next((c for c in self.traced.project.foreign_calls if c.function == name), None)
        if answer is None:
            return None
        if answer.why_not:
            return answer.why_not
        title = (
            f"{self.hoist_title}: the calls of `{name}` in other modules' traced code leave the"
            " trace, with host copies of what they give it"
        )
        return dataclasses.replace(self.make_fix({}, title=title), moves=name)

    def _move_imported_helper_calls(self) -> None:
        """In a module whose traced code calls another module's helper that serializes what
        it is given (`MOVES_CALL`): that call moves out of the trace, reported as a part of
        the helper's fix when every module calling it can move its call; what the run needs
        to decide is noted."""
        facts = self.traced.project.facts
        for imported in self.traced.project.changed_imports:
            returned = imported.returned
            if returned.rule != self.code or MOVES_CALL not in dict(returned.details):
                continue
            references = self.traced.references_to([imported.name])
            if all(self.traced.context_of(r) is None for r in references):
                if facts is not None:  # no traced call here: nothing to move
                    facts.call_sites[imported.name] = ""
                continue
            statement = self._sole_traced_call_line(references)
            fix: Fix | str = "it is not called alone on one line of traced code"
            if statement is not None:
                self._helper_calls.add(statement)
                self.traced.extra_effects[statement] = _written_by(returned, statement)
                fix = self._hoists.fix(statement, "_host_" + returned.function)
            why = "" if isinstance(fix, Fix) else fix or "its call cannot leave the trace"
            if facts is not None:
                facts.call_sites[imported.name] = why
            if why or not imported.allowed or statement is None or not isinstance(fix, Fix):
                continue
            fix = dataclasses.replace(fix, part_of=returned.transaction(imported.definer))
            message = (
                f"`{returned.function}` serializes what it is given ({self.code} reports it"
                f" where it is defined): its call here moves out of the trace"
            )
            self.report(statement.body[0], message, fix)

    def _sole_traced_call_line(
        self, references: Sequence[cst.CSTNode]
    ) -> cst.SimpleStatementLine | None:
        """The one line of traced code that calls the function `references` read, its value
        dropped; None when there is not exactly one."""
        lines = []
        for reference in references:
            if self.traced.context_of(reference) is None:
                continue  # an eager call: it stays
            call = self.traced.parent(reference)
            statement = self.traced.simple_statement(reference)
            if (
                not isinstance(call, cst.Call)
                or call.func is not reference
                or statement is None
                or len(statement.body) != 1
                or not isinstance(statement.body[0], cst.Expr)
                or statement.body[0].value is not call
            ):
                return None
            lines.append(statement)
        return lines[0] if len(lines) == 1 else None

    def visit_Assign(self, node: cst.Assign) -> None:
        """`db[key] = value` into a shelf (`shelve.open`), which pickles the value."""
        context = self.traced.context_of(node) if self._stores_in_a_shelf(node) else None
        if context is None:
            return
        target = node.targets[0].target
        assert isinstance(target, cst.Subscript)
        shown = f"{source_of(target.value)}[...] = ..."
        message = self.message.format(call=shown, function=context.label, reason=context.reasons[0])
        row = self._item_store(node)
        assert row is not None
        fix = self._hoist(node, row.callable.split(".")[0] + "_store")
        if not isinstance(fix, Fix):
            message += "; return the value and store `jax.device_get(out)` after the call"
            message += f" (no host callback: {fix})" if fix else ""
        self.report(node, message, fix if isinstance(fix, Fix) else None)

    def _formats_traced(self, text: cst.BaseExpression) -> bool:
        """Whether `text` is made from a traced value: `f"{loss}"`, `str(loss)`, `"%s" % loss`,
        `"{}".format(loss)`, or strings joined with one of those."""
        if isinstance(text, cst.FormattedString):
            return any(
                isinstance(part, cst.FormattedStringExpression)
                and self.traced.is_traced(part.expression)
                for part in text.parts
            )
        if isinstance(text, cst.BinaryOperation):
            if isinstance(text.operator, cst.Modulo):
                values = text.right.elements if isinstance(text.right, cst.Tuple) else None
                right = [e.value for e in values] if values is not None else [text.right]
                return any(map(self.traced.is_traced, right))
            return self._formats_traced(text.left) or self._formats_traced(text.right)
        if isinstance(text, cst.Call):
            func = text.func
            formats = bool(self.qualified_names(func) & TO_TEXT) or (
                isinstance(func, cst.Attribute)
                and func.attr.value == "format"
                and isinstance(func.value, cst.SimpleString | cst.ConcatenatedString)
            )
            return formats and any(self.traced.is_traced(arg.value) for arg in text.args)
        return False

    def _stores_in_a_shelf(self, node: cst.Assign) -> bool:
        """Whether `node` is `name[key] = value`, a traced value into a store (a shelf, a
        cache) bound to `name`."""
        return self._item_store(node) is not None

    def _item_store(self, node: cst.Assign) -> Sink | None:
        """The row of the store that `node`, `name[key] = value`, writes a traced value to."""
        target = node.targets[0].target if len(node.targets) == 1 else None
        if not isinstance(target, cst.Subscript) or not isinstance(target.value, cst.Name):
            return None
        row = self._checkpointer(target.value, ITEM_STORE)
        return row if row is not None and self.traced.is_traced(node.value) else None

    def _returned(self, call: cst.Call) -> bool:
        """A serialization the function returns is JF107's (`serialized-return`)."""
        return bool(self.qualified_names(call.func) & DUMPS.keys()) and (
            returned(self.traced, call) is not None
        )

    def _serializer(self, call: cst.Call) -> tuple[str, str, list[cst.BaseExpression]] | None:
        """The serializer's display name, its name in the sink model (an array method's own
        name), and the values it serializes."""
        for name in sorted(self.qualified_names(call.func)):
            if name in self._serializers:
                payloads = payload_of(call, self._serializers[name] or FIRST)
                return source_of(call.func), name, payloads
        func = call.func
        if (
            isinstance(func, cst.Attribute)
            and func.attr.value in SERIALIZING_METHODS
            and not self.qualified_names(func.value)
            and self.traced.is_traced(func.value)
        ):
            return f".{func.attr.value}()", func.attr.value, [func.value]
        if isinstance(func, cst.Attribute) and func.attr.value in WRITERS:
            row = self._checkpointer(func.value, func.attr.value)
            if row is None:
                return None
            return source_of(func), row.callable, payload_of(call, row.payload or SAVED)
        return None

    def _checkpointer(self, receiver: cst.BaseExpression, method: str) -> Sink | None:
        """The row whose `method` writes, of `ocp.StandardCheckpointer()`,
        `sqlite3.connect(...)` or `diskcache.Cache(...)`, called there or by the only binding
        of a name. A file, or a method named too commonly to be looked for on any receiver
        (`COMMON_WRITERS`, `ITEM_STORE`), counts only on an object in view (made in traced
        code, bound once at the top level, or opened by a `with` around it)."""
        if isinstance(receiver, cst.Call):
            names = sorted(self.qualified_names(receiver.func) & self._checkpointers.keys())
        elif isinstance(receiver, cst.Name):
            names = [
                name
                for name in sorted(self._checkpointers)
                if self.traced.is_assigned_from(receiver, frozenset({name}))
            ]
        else:
            return None
        for name in names:
            row = next((r for r in self._checkpointers[name] if method in _writers(r)), None)
            if row is None:
                continue
            common = method in COMMON_WRITERS or method == ITEM_STORE
            if (row.callable in TEXT_FILES or common) and not opened_in_view(self.traced, receiver):
                return None
            return row
        return None

    def _hoist(self, call: cst.Call | cst.Assign, call_name: str) -> Fix | str:
        """One fix per statement, shared by every serializer call in it (and in the
        statements that move with it); or why there is none ("" when the statement is not
        host-only)."""
        statement = self._host_only_statement(call)
        if statement is None:
            return ""
        written = call_name.rsplit(").", 1)[-1]  # `csv.writer(f).writerow` -> `writerow`
        return self._hoists.fix(statement, "_host_" + written.replace(".", "_").strip("_()"))

    def _wrapping(
        self, statement: Statement, jax_name: str
    ) -> dict[cst.BaseExpression, cst.BaseExpression]:
        """Each traced value a serializer in `statement` is given -> `jax.device_get(value)`
        (each leaf `.tolist()`'d for a serializer of Python values only)."""
        found = [
            (payload, sink)
            for inner in calls_in(statement)
            if (found := self._serializer(inner)) is not None and found[1] not in TEXT_FILES
            for payload in found[2]
            for sink in [found[1]]
            if self.traced.is_traced(payload)
        ]
        payloads = [payload for payload, _ in found]
        listed = {payload for payload, sink in found if sink in PYTHON_VALUES_ONLY}
        if statement in self._helper_calls:  # a helper's call: what it is given
            assert isinstance(statement, cst.SimpleStatementLine)
            small = statement.body[0]
            assert isinstance(small, cst.Expr) and isinstance(small.value, cst.Call)
            payloads += [a.value for a in small.value.args if self.traced.is_traced(a.value)]
        lines = statement.body.body if isinstance(statement, cst.With) else [statement]
        payloads += [
            small.value
            for line in lines
            if isinstance(line, cst.SimpleStatementLine)
            for small in line.body
            if isinstance(small, cst.Assign) and self._stores_in_a_shelf(small)
        ]
        device_get = cst.parse_expression(f"{jax_name}.device_get(x)")
        as_lists = cst.parse_expression(f"{jax_name}.tree_util.tree_map(lambda a: a.tolist(), x)")
        assert isinstance(device_get, cst.Call) and isinstance(as_lists, cst.Call)
        wrapped: dict[cst.BaseExpression, cst.BaseExpression] = {}
        for p in payloads:
            copy = device_get.with_changes(args=[cst.Arg(p)])
            if p in listed:
                copy = as_lists.with_changes(args=[as_lists.args[0], cst.Arg(copy)])
            wrapped[p] = copy
        return wrapped

    def _movable(self, statement: Statement) -> bool:
        """A statement that can move into the host function with the serialization."""
        if isinstance(statement, cst.With):
            return self._is_open_block(statement)
        return self._is_host_only_line(statement)

    def _host_only_statement(
        self, call: cst.Call | cst.Assign
    ) -> cst.SimpleStatementLine | cst.With | cst.If | None:
        """The statement holding `call` if its only effect is on host state, else None.

        Inside `with ... as f:` the whole block moves (the host function cannot write to a
        file the block has already closed), and only when it is a block of `open(...)`s; an
        `if` whose test on traced values only gates host effects moves whole (`gating_if`)."""
        node = self.traced.simple_statement(call, through_applied=True)
        if node is None or not self._is_host_only_line(node):
            return None
        gate = gating_if(self.traced, node, self._movable)
        if gate is not None:
            return gate
        block = self.traced.parent(node)
        with_node = self.traced.parent(block) if block is not None else None
        if not isinstance(with_node, cst.With) or all(i.asname is None for i in with_node.items):
            return node
        return with_node if self._is_open_block(with_node) else None

    def _is_host_only_line(self, statement: cst.CSTNode) -> bool:
        """A lone expression whose value is dropped, or an assignment only the host sees (an
        item of a shelf: the `with shelve.open(...)` block it is in moves with it)."""
        if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
            return False
        small = statement.body[0]
        if isinstance(small, cst.Assign):
            return self._stores_in_a_shelf(small) or all(
                is_host_only_target(self.traced, t.target) for t in small.targets
            )
        return isinstance(small, cst.Expr)

    def _is_open_block(self, with_node: cst.With) -> bool:
        """`with open(...) as f:` whose every statement is host-only."""
        if with_node.asynchronous is not None:
            return False
        for item in with_node.items:
            opener = item.item
            if not isinstance(opener, cst.Call):
                return False
            is_open = bool(self.qualified_names(opener.func) & OPENERS) or (
                isinstance(opener.func, cst.Attribute) and opener.func.attr.value == "open"
            )
            if not is_open:
                return False
        return all(self._is_host_only_line(statement) for statement in with_node.body.body)


def _written_by(helper: ReturnChange, call_line: cst.SimpleStatementLine) -> Keys:
    """What the call of another module's helper on `call_line` writes: what the helper's own
    code shows, and the strings the call gives it (the names of what it writes, as it may
    build them: `open(f"{name}.pkl")`)."""
    return Keys.from_plain(helper.detail(WRITES)) | Keys(paths=frozenset(_strings_in(call_line)))


def _strings_in(node: cst.CSTNode) -> set[str]:
    """The strings written in `node`'s code, and the literal parts of its f-strings."""
    found = set()
    for part in descendants(node):
        if isinstance(part, cst.SimpleString) and isinstance(part.evaluated_value, str):
            found.add(part.evaluated_value)
        elif isinstance(part, cst.FormattedStringText):
            found.add(part.value)
    return {text for text in found if text.strip()}


# `SerializeInTracedCommand`: this rule as a LibCST codemod (`python -m libcst.tool codemod`).
__getattr__, __dir__ = command_hooks(SerializeInTraced)
