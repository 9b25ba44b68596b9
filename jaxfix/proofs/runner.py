"""Run Python programs under jax in this one interpreter (jax is imported once) and write, as a
JSON line each to WORKDIR/results.jsonl, what each printed, raised, logged and left in its
working directory: the subprocess behind `jaxfix.proofs.cases.run_programs`.

    python -m jaxfix.proofs.runner WORKDIR MODE:PROGRAM [MODE:PROGRAM ...]

MODE says how the program's host callbacks run: `synchronous`, as a CPU runs them (before the
jitted call returns), `deferred`, as an accelerator may (at the next `jax.effects_barrier()` or
the program's end: `jaxfix.proofs.deferred_callbacks`), or `concrete`: synchronous, and the whole
program under `jax.disable_jit()`, so that a jitted function's values are concrete (what its
author meant it to do, where no transformation but `jit` traces them). Each program runs as
__main__ in its own empty working directory below WORKDIR, its folder first on `sys.path` (as
`python PROGRAM` runs it: a project's `main.py` imports its modules and packages beside it).
Many programs share the interpreter (a rule's fixtures, or a whole test batch), so what a
program may change for the next one is put back after it (`isolated`): the working directory,
`sys.path` and `sys.argv`, the modules imported from its folder, the warning filters and the
root logger (a fixture's `logging.basicConfig(stream=sys.stdout, force=True)` would otherwise
send the next programs' log records to its own, finished, captured stdout).

What a program did, besides printing: the `logging` records it emitted (`LEVEL:logger:message`;
jax's own left out), and a manifest of the files it left in its working directory (`manifest`).

A program that runs past its mode's time limit (`LIMITS`, or `JAXFIX_PROOF_LIMIT` seconds for
every mode: a process it forked with jax running deadlocks, as jax warns) ends the interpreter:
its result says `TimeoutError`, and the exit status `RESTART` tells the caller to run the
programs after it in a fresh one. So does a program after which `jax.effects_barrier()` still
raises: once an ordered host callback has raised where the runtime runs it asynchronously (an
accelerator, or `shard_map`), jax raises that error again at every later barrier (jax#37587), so
the interpreter is of no use to the next program; and that error, once the program was given it
and went on, is not its failure at the end either (`Barrier`).
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import io
import json
import logging
import os
import pickle
import re
import runpy
import sys
import threading
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

MODES = ("synchronous", "deferred", "concrete")
# Seconds a program may run. A concrete run only asks what a before program meant to do: one
# that hangs is skipped as not concrete-runnable, so it is not waited for as long.
LIMITS = {"synchronous": 120.0, "deferred": 120.0, "concrete": 10.0}
RESTART = 3  # the exit status that asks for a fresh interpreter for the programs left
RESULTS = "results.jsonl"
# A file's contents as the manifest gives them: (kind, value). `value` is the normalized text of
# what the file holds (its numbers compared within a backend's precision), `text` the file's
# own text, `sha256` the digest of its bytes (both compared exactly).
Digest = tuple[str, str]
MAX_TEXT = 200_000  # characters kept of a text or a value; a longer one is kept as its digest
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")
_JAX_LOGGERS = ("jax", "jaxlib", "absl")


@contextlib.contextmanager
def isolated(workdir: Path, folder: Path, program: Path) -> Iterator[None]:
    """Run the body in `workdir` with `folder` first on `sys.path`, then restore the process
    state a program may change, and forget the modules it imported from `folder`."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    previous = os.getcwd()
    path, argv, known = list(sys.path), list(sys.argv), set(sys.modules)
    writes_bytecode = sys.dont_write_bytecode
    sys.dont_write_bytecode = True  # no __pycache__ in the fixtures' folders
    sys.path.insert(0, str(folder))
    sys.argv[:] = [str(program)]
    os.chdir(workdir)
    try:
        with warnings.catch_warnings():
            yield
    finally:
        os.chdir(previous)
        sys.path[:], sys.argv[:] = path, argv
        sys.dont_write_bytecode = writes_bytecode
        root.handlers[:] = handlers
        root.setLevel(level)
        forget_modules(folder, known)


def forget_modules(folder: Path, known: set[str]) -> None:
    """Remove from `sys.modules` the modules imported since `known` from files below `folder`:
    the next program may hold modules of the same names (another project's `pkg.steps`)."""
    for name in set(sys.modules) - known:
        module = sys.modules.get(name)
        places = [getattr(module, "__file__", None), *(getattr(module, "__path__", None) or ())]
        if any(place and Path(place).resolve().is_relative_to(folder) for place in places):
            del sys.modules[name]
    sys.path_importer_cache.pop(str(folder), None)
    importlib.invalidate_caches()


@contextlib.contextmanager
def logged(records: list[str]) -> Iterator[None]:
    """Append to `records` every `logging` record emitted (one that its logger's level lets
    through, handled or not), but jax's own."""
    handle: Callable[[logging.Logger, logging.LogRecord], None] = logging.Logger.callHandlers

    def call_handlers(logger: logging.Logger, record: logging.LogRecord) -> None:
        if record.name.split(".")[0] not in _JAX_LOGGERS:
            try:
                message = record.getMessage()
            except Exception:  # a malformed record: logging reports it, we keep its text
                message = str(record.msg)
            records.append(f"{record.levelname}:{record.name}:{message}")
        handle(logger, record)

    setattr(logging.Logger, "callHandlers", call_handlers)  # noqa: B010 - patches a class
    try:
        yield
    finally:
        setattr(logging.Logger, "callHandlers", handle)  # noqa: B010


class Barrier:
    """`jax.effects_barrier` as the programs call it, remembering the errors it gave the
    program running: after an ordered callback raised, jax may raise that error again at every
    later barrier (jax#37587)."""

    def __init__(self) -> None:
        import jax
        from jax._src import api

        self._barrier: Callable[[], None] = jax.effects_barrier
        self.given: set[str] = set()  # the messages of the errors the program was given
        setattr(api, "effects_barrier", self)  # noqa: B010 - `clear_backends` calls it
        setattr(jax, "effects_barrier", self)  # noqa: B010 - what the programs call

    def __call__(self) -> None:
        try:
            self._barrier()
        except BaseException as error:
            self.given.add(str(error))
            raise

    def at_end(self) -> None:
        """The barrier at a program's end: raises what the program left failing, but not an
        error it was given already and went on from."""
        given = set(self.given)
        try:
            self._barrier()
        except BaseException as error:
            if str(error) not in given:
                raise

    def clean(self) -> bool:
        """The barrier raises nothing now: the next program can run in this interpreter."""
        try:
            self._barrier()
        except BaseException:
            return False
        return True


def run_one(program: Path, workdir: Path, mode: str, barrier: Barrier) -> dict[str, object]:
    import jax  # only this subprocess imports jax, never jaxfix itself

    workdir.mkdir(parents=True)
    barrier.given.clear()
    buffer = io.StringIO()
    error: tuple[str, str] | None = None
    records: list[str] = []
    names: dict[str, Any] = {}
    concrete = jax.disable_jit() if mode == "concrete" else contextlib.nullcontext()
    with isolated(workdir, program.parent, program), contextlib.redirect_stdout(buffer):
        with logged(records):
            try:
                with concrete:
                    names = runpy.run_path(str(program), run_name="__main__")
                barrier.at_end()
            except BaseException as exc:  # the program's failure is the result
                error = (type(exc).__name__, str(exc))  # what `error_match` is looked for in
                with contextlib.suppress(BaseException):  # nothing is left for the next program
                    jax.effects_barrier()  # type: ignore[no-untyped-call]
        # While the program's modules are still imported: its pickles may name their classes.
        files = manifest(workdir, program, names)
    return {"stdout": buffer.getvalue(), "error": error, "logs": records, "files": files}


def manifest(workdir: Path, program: Path, names: dict[str, Any]) -> dict[str, Digest]:
    """Each file below `workdir` (relative POSIX path) and its contents, normalized: NumPy's
    `.npy` / `.npz` files, pickles (plain, cloudpickle, dill, joblib), JSON and SQLite databases
    (diskcache's) loaded, and an Orbax checkpoint folder (`name/`) restored, each array (jax or
    NumPy) as a NumPy array's shape and values (`normal`); other text as it is; other bytes as
    their SHA-256. The program's own path, however spelled (joblib names its cache folders
    after it), reads as `<program>` and its folder as `<folder>`: a before and an after program
    that do the same thing name the same files. `names`: the program's globals, where a
    pickle's `__main__` classes are found."""
    reader = _Reader(program, names)
    found: dict[str, Digest] = {}
    restored: list[Path] = []
    for folder in sorted(p.parent for p in workdir.rglob("_CHECKPOINT_METADATA")):
        contents = reader.checkpoint(folder)
        if contents is not None:
            found[reader.anonymous(folder.relative_to(workdir).as_posix()) + "/"] = contents
            restored.append(folder)
    for path in sorted(p for p in workdir.rglob("*") if p.is_file()):
        if not any(path.is_relative_to(folder) for folder in restored):
            found[reader.anonymous(path.relative_to(workdir).as_posix())] = reader.digest(path)
    return found


class _Reader:
    def __init__(self, program: Path, names: dict[str, Any]) -> None:
        self.names = names
        spellings = {}
        for path, name in ((program, "<program>"), (program.parent, "<folder>")):
            for spelled in (str(path), str(path.with_suffix("")) if path.suffix else str(path)):
                spellings[spelled] = name
                spellings[spelled.replace(os.sep, "-")] = name  # joblib's cache folders
        self.spellings = sorted(spellings.items(), key=lambda item: -len(item[0]))

    def anonymous(self, text: str) -> str:
        for spelled, name in self.spellings:
            text = text.replace(spelled, name)
        return text

    def digest(self, path: Path) -> Digest:
        data = path.read_bytes()
        with contextlib.suppress(Exception):  # a file that does not load is compared by its bytes
            value = self.loaded(path, data)
            if value is not _UNKNOWN:
                return _kept("value", self.anonymous(normal(value)))
        if b"\0" not in data:
            with contextlib.suppress(UnicodeDecodeError):
                text = data.decode("utf-8")
                if text.lstrip()[:1] in ("{", "["):  # JSON's numbers (times, sizes): values
                    with contextlib.suppress(ValueError):
                        value = _untimed(json.loads(text))
                        return _kept("value", self.anonymous(normal(value)))
                return _kept("text", self.anonymous(text))
        return ("sha256", hashlib.sha256(data).hexdigest())

    def loaded(self, path: Path, data: bytes) -> object:
        """What the file holds, or `_UNKNOWN` when it is neither NumPy's nor a pickle nor a
        database."""
        import numpy as np

        if data.startswith(b"\x93NUMPY"):
            return np.load(path, allow_pickle=True)
        if data.startswith(b"PK\x03\x04"):
            with np.load(path, allow_pickle=True) as archive:  # an .npz, else it raises
                return {name: archive[name] for name in sorted(archive.files)}
        if data.startswith(b"SQLite format 3\0"):
            return self.database(path)
        if b"joblib" in data[:4096] or data[:2] in (b"ZF", b"x\x9c", b"x\xda"):
            import joblib  # type: ignore[import-untyped]

            return joblib.load(path)
        if data.startswith(b"\x80"):
            return _Unpickler(io.BytesIO(data), self.names).load()
        return _UNKNOWN

    def database(self, path: Path) -> dict[str, list[str]]:
        """Each table's rows, in a fixed order, a pickled cell loaded (a timestamp cell is
        compared within tolerance, as every number of a value is)."""
        import sqlite3

        def cell(value: object) -> object:
            if isinstance(value, bytes) and value.startswith(b"\x80"):
                with contextlib.suppress(Exception):
                    return _Unpickler(io.BytesIO(value), self.names).load()
            return value

        with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as db:
            query = "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name"
            tables = [name for (name,) in db.execute(query)]
            return {
                table: sorted(
                    normal([cell(v) for v in row]) for row in db.execute(f'SELECT * FROM "{table}"')
                )
                for table in tables
            }

    def checkpoint(self, folder: Path) -> Digest | None:
        """An Orbax checkpoint's contents, restored (its files hold random names and times)."""
        with contextlib.suppress(Exception):
            import orbax.checkpoint as ocp  # type: ignore[import-untyped]

            with ocp.StandardCheckpointer() as checkpointer:
                return _kept("value", normal(checkpointer.restore(folder.resolve())))
        return None


_UNKNOWN = object()
# The keys of the record of a call that `joblib.Memory` writes (metadata.json), and the ones that
# tell when the run made it and how long it took: two runs of one program differ there.
_JOBLIB_CALL = {"duration", "input_args", "time"}
_JOBLIB_TIMES = ("duration", "time")


def _untimed(value: object) -> object:
    """A JSON value less the times of a joblib call record."""
    if isinstance(value, dict) and set(value) == _JOBLIB_CALL:
        return {key: item for key, item in value.items() if key not in _JOBLIB_TIMES}
    return value


class _Unpickler(pickle.Unpickler):
    """A pickle's classes from the program's `__main__`, and a stand-in for a class that cannot
    be found (its name kept), so that what it holds is still compared."""

    def __init__(self, file: io.BytesIO, names: dict[str, Any]) -> None:
        super().__init__(file)
        self.names = names

    def find_class(self, module: str, name: str) -> Any:
        if module == "__main__" and name in self.names:
            return self.names[name]
        try:
            return super().find_class(module, name)
        except (ImportError, AttributeError):
            return type(name, (_StandIn,), {"__module__": module, "__qualname__": name})


class _StandIn:
    def __init__(self, *args: object, **kwargs: object) -> None:
        self.__dict__["args"] = (args, kwargs)

    def __setstate__(self, state: object) -> None:
        self.__dict__["state"] = state


def normal(value: object, depth: int = 0) -> str:
    """`value` as text that two runs that did the same thing give alike: every array leaf (jax
    or NumPy, a scalar too) as `array<shape>` and its values, dict items and set members in a
    fixed order, objects as their class and attributes, no memory addresses."""
    import numpy as np

    if depth > 40:
        return "..."
    inner = depth + 1
    if value is None or isinstance(value, bool | int | float | complex | str | bytes):
        return repr(value)
    if isinstance(value, np.ndarray | np.generic) or (
        hasattr(value, "__array__") and hasattr(value, "shape") and hasattr(value, "dtype")
    ):
        array = np.asarray(value)
        if array.dtype.kind not in "biufcUSO":  # bfloat16 and other extension types
            array = array.astype(np.float64)
        values = array.tolist()
        shown = normal(values, inner) if array.dtype.kind == "O" else repr(values)
        return f"array{array.shape}{shown}"
    if isinstance(value, dict):
        items = sorted((normal(k, inner), normal(v, inner)) for k, v in value.items())
        return "{" + ", ".join(f"{k}: {v}" for k, v in items) + "}"
    if isinstance(value, set | frozenset):
        return "{" + ", ".join(sorted(normal(v, inner) for v in value)) + "}"
    if isinstance(value, list | tuple):
        shown = ", ".join(normal(v, inner) for v in value)
        if type(value) in (list, tuple):
            return f"[{shown}]" if type(value) is list else f"({shown})"
        return f"{type(value).__qualname__}({shown})"  # a named tuple
    kind = type(value)
    if isinstance(value, type) or callable(value):
        return f"<{getattr(value, '__qualname__', kind.__qualname__)}>"
    attributes = getattr(value, "__dict__", None)
    if isinstance(attributes, dict):
        return f"{kind.__qualname__}({normal(attributes, inner)})"
    return _ADDRESS.sub("", repr(value))


def _kept(kind: str, text: str) -> Digest:
    if len(text) > MAX_TEXT:
        return ("sha256", hashlib.sha256(text.encode()).hexdigest())
    return (kind, text)


class _Results:
    """WORKDIR/results.jsonl, a line a program, each written whole: by the program's end, or by
    its watchdog when it runs past its limit (then the interpreter ends)."""

    def __init__(self, path: Path) -> None:
        self.file = path.open("a", encoding="utf-8")
        self.lock = threading.Lock()
        self.written = 0

    def write(self, result: dict[str, object], index: int) -> bool:
        """Write the result of program `index` unless one is written already."""
        with self.lock:
            if self.written > index:
                return False
            self.file.write(json.dumps(result) + "\n")
            self.file.flush()
            self.written = index + 1
            return True

    def time_out(self, index: int, limit: float) -> None:
        error = ("TimeoutError", f"the program ran past {limit:g} s (a deadlock?)")
        timed_out: dict[str, object] = {"stdout": "", "error": error, "logs": [], "files": {}}
        if self.write(timed_out, index):
            os._exit(RESTART)  # the program's threads and processes cannot be stopped


def main(argv: list[str]) -> None:
    from jaxfix.proofs.deferred_callbacks import Deferral, install

    workdir = Path(argv[0])
    given = [argument.partition(":") for argument in argv[1:]]
    for mode, _, program in given:
        if mode not in MODES:
            sys.exit(f"error: {mode}:{program!r} is not MODE:PROGRAM with MODE one of {MODES}")
    deferral = Deferral()
    install(deferral)
    barrier = Barrier()
    results = _Results(workdir / RESULTS)
    for index, (mode, _, program) in enumerate(given):
        deferral.enabled = mode == "deferred"
        limit = float(os.environ.get("JAXFIX_PROOF_LIMIT") or LIMITS[mode])
        watchdog = threading.Timer(limit, results.time_out, (index, limit))
        watchdog.daemon = True
        watchdog.start()
        result = run_one(Path(program).resolve(), workdir / str(index), mode, barrier)
        watchdog.cancel()
        results.write(result, index)
        if index + 1 < len(given) and not barrier.clean():
            os._exit(RESTART)  # (not `sys.exit`: jax's exit handlers would raise it again)


if __name__ == "__main__":
    main(sys.argv[1:])
