"""The shipped fixture cases, and the proof each one gives under the installed jax.

A case is `<fixtures>/<rule module>/<case>/` with `before.py`, `expect.toml` and, when jaxfix
rewrites it, `after.py`; or, for a rewrite across modules, a project case: folders `before/`
and (when jaxfix rewrites it) `after/`, each a small project whose entry is `main.py`, run as
`python main.py` runs it (its folder first on `sys.path`, so that it imports the modules and
packages beside it). Its proof, judged here for both the test suite and `jaxfix verify`:
the before program raises the documented exception (or, with `before_stdout`, runs and prints
that), and the after program runs and prints `stdout`, numbers within a backend's precision
(`same_output`). The programs run under jax in a subprocess (`jaxfix.proofs.runner`), so this
module never imports jax, with their host callbacks deferred as an accelerator may defer them,
or run at once as a CPU runs them, or with jit disabled (`Callbacks`): what the before program
does then, with concrete values, is what its author meant, and the fixed program must do the
same (`effect_differences`).
"""

from __future__ import annotations

import contextlib
import enum
import itertools
import json
import math
import os
import re
import signal
import subprocess
import sys
import tempfile
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from jaxfix.proofs.runner import RESTART, RESULTS

KEYS = {
    "description",
    "codes",
    "fixed",
    "error",
    "error_match",
    "stdout",
    "before_stdout",
    "remaining",
}
TIMEOUT = 600  # seconds for one rule's programs
# Numbers printed by a proof match within this: an accelerator's matrix products run at lower
# precision (a TPU printed 0.714 where a CPU prints 0.7141).
REL_TOL, ABS_TOL = 1e-2, 1e-3
_NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?")
_INTEGER = re.compile(r"[-+]?\d+")
# How a jax array's type and repr print, and a NumPy array's (`effect_differences`).
_JAX_ARRAY_NAMES = [
    (re.compile(r"\bjaxlib\._jax\.ArrayImpl\b"), "numpy.ndarray"),
    (re.compile(r"\bArrayImpl\b"), "ndarray"),
    (re.compile(r"\bArray\("), "array("),
]
# The entry of a project case's program: `before/main.py`, `after/main.py`.
ENTRY = "main.py"


class Callbacks(enum.Enum):
    """When a program's host callbacks (`jax.debug.callback`, `io_callback`) run."""

    DEFERRED = "deferred"  # at the next `jax.effects_barrier()` or the end, as on a TPU or GPU
    SYNCHRONOUS = "synchronous"  # before the jitted call returns, as on a CPU
    # Synchronous, and the program run under `jax.disable_jit()`: its values are concrete. Only
    # a case's before program runs so (`programs_for`), for `effect_differences`.
    CONCRETE = "concrete"


def fixtures_folder() -> Path:
    """Where the cases are: `tests/fixtures` of the source tree, installed as
    `jaxfix.fixtures`."""
    return Path(str(resources.files("jaxfix.fixtures")))


@dataclass(frozen=True)
class Case:
    rule: str  # the rule's module name, e.g. serialize_in_traced
    name: str
    directory: Path
    description: str
    # What check(before) reports, in source order; in a project case, the files in path order
    # (`sources`), each file's findings in line order.
    codes: list[str]
    fixed: bool  # whether apply(before) changes it (then after.py, or after/, holds the result)
    remaining: list[str]  # what check(after) still reports, in the same order
    error: str | None  # the exception before.py raises under jax
    error_match: str | None
    stdout: str | None  # what the fixed program (or a clean before.py) prints
    # What a before.py that misbehaves without raising prints (a `print` of a tracer shows
    # `Traced<...>`, not its values); then `error` is unset and after.py prints `stdout`.
    before_stdout: str | None = None

    @property
    def id(self) -> str:
        return f"{self.rule}/{self.name}"

    @property
    def project(self) -> bool:
        """Whether the case is a project (folders `before/`, `after/`), not one file."""
        return (self.directory / "before").is_dir()

    @property
    def before(self) -> Path:
        """before.py, or a project case's folder `before/`."""
        return self.directory / ("before" if self.project else "before.py")

    @property
    def after(self) -> Path:
        """after.py, or a project case's folder `after/`."""
        return self.directory / ("after" if self.project else "after.py")

    @property
    def before_program(self) -> Path:
        return self.before / ENTRY if self.project else self.before

    @property
    def after_program(self) -> Path:
        return self.after / ENTRY if self.project else self.after

    @property
    def programs(self) -> list[Path]:
        """What runs under jax: the before program, then the after one when there is one."""
        return [self.before_program] + ([self.after_program] if self.fixed else [])


def sources(side: Path) -> dict[str, str]:
    """The Python files of one side of a case (before.py, or a project's folder), by their path
    relative to it (`before.py` itself under its own name), in path order, with their text."""
    if side.is_file():
        return {side.name: side.read_text(encoding="utf-8")}
    return {
        path.relative_to(side).as_posix(): path.read_text(encoding="utf-8")
        for path in sorted(side.rglob("*.py"))
        if "__pycache__" not in path.parts
    }


def programs_for(case: Case, mode: Callbacks) -> list[Path]:
    """What runs in `mode`: the before program alone with jit disabled (`CONCRETE`), else every
    program of the case."""
    return [case.before_program] if mode is Callbacks.CONCRETE else case.programs


def load_cases(folder: Path | None = None, *, projects: bool = False) -> list[Case]:
    """Every case below `folder` (the shipped fixtures by default), in path order; project
    cases only with `projects` (for the callers that read `case.before` as one file)."""
    cases = []
    for directory in sorted((folder or fixtures_folder()).glob("*/*/")):
        if (directory / "before").is_dir() and not projects:
            continue
        data = tomllib.loads((directory / "expect.toml").read_text(encoding="utf-8"))
        _check_keys(directory, data)
        cases.append(
            Case(
                rule=directory.parent.name,
                name=directory.name,
                directory=directory,
                description=data["description"],
                codes=data["codes"],
                fixed=data["fixed"],
                remaining=data.get("remaining", []),
                error=data.get("error"),
                error_match=data.get("error_match"),
                stdout=data.get("stdout"),
                before_stdout=data.get("before_stdout"),
            )
        )
    return cases


def _check_keys(directory: Path, data: Mapping[str, Any]) -> None:
    """Refuse an `expect.toml` whose proof could not fail where it should: unknown keys, an
    `error` without the `error_match` that only the documented failure's message holds (its
    class alone is raised by unrelated mistakes too), or a fixed case whose `before` is
    expected neither to fail nor to print (its `after` would never be judged)."""
    where = f"{directory}/expect.toml"
    unknown = set(data) - KEYS
    if unknown:
        raise ValueError(f"{where}: unknown keys {sorted(unknown)}")
    if "error" in data and "error_match" not in data:
        raise ValueError(f"{where}: `error` needs an `error_match` from the failure's message")
    if data.get("fixed") and "error" not in data and "before_stdout" not in data:
        raise ValueError(f"{where}: a fixed case needs the `error` or `before_stdout` of before")


@dataclass(frozen=True)
class Run:
    """What one program printed, the exception it raised (type name, message), the `logging`
    records it emitted (`LEVEL:logger:message`) and the files it left in its working directory
    (relative path: (kind, contents), `jaxfix.proofs.runner.manifest`)."""

    stdout: str
    error: tuple[str, str] | None
    logs: tuple[str, ...] = ()
    files: Mapping[str, tuple[str, str]] = field(default_factory=dict)


def run_programs(
    programs: Sequence[Path],
    python: str = sys.executable,
    callbacks: Sequence[Callbacks] | Callbacks = Callbacks.DEFERRED,
) -> list[Run]:
    """Run `programs` under jax in one fresh interpreter (jax is imported once), with their
    host callbacks run as `callbacks` says (one mode for all, or one per program). A program
    that runs past its time limit (`jaxfix.proofs.runner.LIMITS`) raised `TimeoutError`; the
    programs after it, or after one that left jax's effects failing, run in a fresh
    interpreter."""
    modes = [callbacks] * len(programs) if isinstance(callbacks, Callbacks) else callbacks
    given = [f"{mode.value}:{program}" for program, mode in zip(programs, modes, strict=True)]
    runs: list[Run] = []
    while len(runs) < len(given):
        runs.extend(_run_in_one_interpreter(given[len(runs) :], python))
    return runs


def _run_in_one_interpreter(given: list[str], python: str) -> list[Run]:
    """The runs of the `MODE:PROGRAM`s `given`, up to the first after which the interpreter
    asked for a fresh one (`RESTART`); then every process it left (a deadlocked fork) is
    killed."""
    with tempfile.TemporaryDirectory(prefix="jaxfix-proof-") as workdir:
        command = [python, "-m", "jaxfix.proofs.runner", workdir, *given]
        errors = Path(workdir) / "stderr.txt"
        with errors.open("w", encoding="utf-8") as stderr:
            # Its own process group, so that its processes end with it; the results come in a
            # file: a process a program starts may write to standard output.
            process = subprocess.Popen(
                command, stdout=subprocess.DEVNULL, stderr=stderr, start_new_session=True
            )
            try:
                status = process.wait(timeout=TIMEOUT)
            except subprocess.TimeoutExpired:
                status = None
            finally:
                _kill_group(process)
        results = Path(workdir) / RESULTS
        lines = results.read_text(encoding="utf-8").splitlines() if results.exists() else []
        if status is None:
            raise RuntimeError(f"the programs ran past {TIMEOUT} s")
        if status not in (0, RESTART) or not lines or (status == 0 and len(lines) < len(given)):
            raise RuntimeError(errors.read_text().strip() or f"exit status {status}")
    return [_run_of(json.loads(line)) for line in lines]


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.kill()
        process.wait()
    if hasattr(os, "killpg"):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)


def _run_of(result: dict[str, Any]) -> Run:
    return Run(
        result["stdout"],
        (result["error"][0], result["error"][1]) if result["error"] else None,
        tuple(result["logs"]),
        {path: (kind, value) for path, (kind, value) in result["files"].items()},
    )


Proving = tuple[Case, Callbacks]


def run_cases(
    proving: Sequence[Proving], python: str = sys.executable
) -> dict[tuple[str, Callbacks], list[Run]]:
    """The runs of each case's programs in each mode given (by case id and mode), all in one
    fresh interpreter, in order."""
    programs = [(p, mode) for case, mode in proving for p in programs_for(case, mode)]
    runs = run_programs([p for p, _ in programs], python, [mode for _, mode in programs])
    found: dict[tuple[str, Callbacks], list[Run]] = {}
    for case, mode in proving:
        count = len(programs_for(case, mode))
        found[case.id, mode], runs = runs[:count], runs[count:]
    return found


def problems(case: Case, runs: Sequence[Run]) -> list[str]:
    """Why the runs of `case.programs` do not prove the case (none when they do)."""
    before = runs[0]
    # before.py and after.py, or a project case's before/main.py and after/main.py.
    first = case.before_program.relative_to(case.directory).as_posix()
    second = case.after_program.relative_to(case.directory).as_posix()
    found: list[str] = []
    if case.before_stdout is not None:
        if before.error is not None:
            found.append(f"{first} raised {before.error[0]}: {_first_line(before.error[1])}")
        elif not same_output(before.stdout, case.before_stdout):
            found.append(f"{first} printed {before.stdout!r}, not {case.before_stdout!r}")
    elif case.error is None:
        if before.error is not None:
            found.append(f"{first} raised {before.error[0]}: {_first_line(before.error[1])}")
        elif not _prints(before, case.stdout):
            found.append(f"{first} printed {before.stdout!r}, not {case.stdout!r}")
        return found
    elif before.error is None:
        found.append(f"{first} did not fail (it printed {before.stdout!r})")
    elif before.error[0] != case.error:
        found.append(f"{first} raised {before.error[0]}, not {case.error}")
    elif case.error_match is not None and case.error_match not in before.error[1]:
        found.append(f"{first}'s {case.error} does not mention {case.error_match!r}")
    if case.fixed:
        after = runs[1]
        if after.error is not None:
            found.append(f"{second} raised {after.error[0]}: {_first_line(after.error[1])}")
        elif not _prints(after, case.stdout):
            found.append(f"{second} printed {after.stdout!r}, not {case.stdout!r}")
    return found


def same_output(printed: str, expected: str) -> bool:
    """Whether `printed` reads as `expected`: the same text, its numbers within `REL_TOL`
    (or `ABS_TOL`) of the expected ones; integers (no decimal point, no exponent) on both
    sides exactly ("101 rows" is not "100 rows")."""
    if printed == expected:
        return True
    if _NUMBER.split(printed) != _NUMBER.split(expected):
        return False
    numbers = zip(_NUMBER.findall(printed), _NUMBER.findall(expected), strict=True)
    return all(_same_number(a, b) for a, b in numbers)


def _same_number(a: str, b: str) -> bool:
    if _INTEGER.fullmatch(a) and _INTEGER.fullmatch(b):
        return int(a) == int(b)
    return math.isclose(float(a), float(b), rel_tol=REL_TOL, abs_tol=ABS_TOL)


def effect_differences(before: Run, after: Run) -> list[str]:
    """How what `after` did differs from what `before` did (none when it does the same): what
    it printed (`same_output`), the `logging` records it emitted, in order (each compared as
    printed text), and the files it left in its working directory, the same paths with the
    same contents (loaded values compared as printed text, other text and bytes exactly).

    A jax array printed reads as a NumPy one (`ArrayImpl` as `ndarray`, `Array(` as `array(`):
    a fix hands host code NumPy arrays (`jax.device_get`) on purpose, and a file's arrays are
    compared as NumPy's too."""
    found: list[str] = []
    if not same_output(_as_numpy(after.stdout), _as_numpy(before.stdout)):
        found.append(f"printed {_short(after.stdout)}, not {_short(before.stdout)}")
    pairs = itertools.zip_longest(before.logs, after.logs)
    for index, (meant, logged) in enumerate(pairs):
        if meant is None or logged is None or not same_output(_as_numpy(logged), _as_numpy(meant)):
            found.append(f"log record {index + 1} is {_short(logged)}, not {_short(meant)}")
            break
    for path in sorted(before.files.keys() - after.files.keys()):
        found.append(f"did not write {path}")
    for path in sorted(after.files.keys() - before.files.keys()):
        found.append(f"wrote {path}, which the concrete run does not")
    for path in sorted(before.files.keys() & after.files.keys()):
        (kind, meant), (wrote, written) = before.files[path], after.files[path]
        same = kind == wrote and (
            written == meant or (kind == "value" and same_output(written, meant))
        )
        if not same:
            found.append(f"wrote {path} as {wrote} {_short(written)}, not {kind} {_short(meant)}")
    return found


def _as_numpy(text: str) -> str:
    for jax_name, numpy_name in _JAX_ARRAY_NAMES:
        text = jax_name.sub(numpy_name, text)
    return text


def _short(text: str | None, limit: int = 300) -> str:
    if text is None:
        return "nothing"
    return repr(text) if len(text) <= limit else repr(text[:limit]) + "..."


def _prints(run: Run, expected: str | None) -> bool:
    return expected is not None and same_output(run.stdout, expected)


def _first_line(message: str) -> str:
    return message.strip().splitlines()[0] if message.strip() else ""
