"""The shipped fixture cases, and the proof each one gives under the installed jax.

A case is `<fixtures>/<rule module>/<case>/` with `before.py`, `expect.toml` and, when jaxfix
rewrites it, `after.py`. Its proof, judged here for both the test suite and `jaxfix verify`:
`before.py` raises the documented exception (or, with `before_stdout`, runs and prints that),
and `after.py` runs and prints `stdout`, numbers within a backend's precision (`same_output`).
The programs run under jax in a subprocess (`jaxfix.proof_runner`), so this module never imports
jax, with their host callbacks deferred as an accelerator may defer them, or run at once as a CPU
runs them (`Callbacks`).
"""

from __future__ import annotations

import enum
import json
import math
import re
import subprocess
import sys
import tempfile
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

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


class Callbacks(enum.Enum):
    """When a program's host callbacks (`jax.debug.callback`, `io_callback`) run."""

    DEFERRED = "deferred"  # at the next `jax.effects_barrier()` or the end, as on a TPU or GPU
    SYNCHRONOUS = "synchronous"  # before the jitted call returns, as on a CPU


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
    codes: list[str]  # what check(before) reports, in source order
    fixed: bool  # whether apply(before) changes the file (then after.py holds the result)
    remaining: list[str]  # what check(after) still reports
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
    def before(self) -> Path:
        return self.directory / "before.py"

    @property
    def after(self) -> Path:
        return self.directory / "after.py"

    @property
    def programs(self) -> list[Path]:
        """What runs under jax: before.py, then after.py when there is one."""
        return [self.before] + ([self.after] if self.fixed else [])


def load_cases(folder: Path | None = None) -> list[Case]:
    """Every case below `folder` (the shipped fixtures by default), in path order."""
    cases = []
    for directory in sorted((folder or fixtures_folder()).glob("*/*/")):
        data = tomllib.loads((directory / "expect.toml").read_text(encoding="utf-8"))
        unknown = set(data) - KEYS
        if unknown:
            raise ValueError(f"{directory}/expect.toml: unknown keys {sorted(unknown)}")
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


@dataclass(frozen=True)
class Run:
    """What one program printed, and the exception it raised (type name, message)."""

    stdout: str
    error: tuple[str, str] | None


def run_programs(
    programs: Sequence[Path],
    python: str = sys.executable,
    callbacks: Sequence[Callbacks] | Callbacks = Callbacks.DEFERRED,
) -> list[Run]:
    """Run `programs` under jax in one fresh interpreter (jax is imported once), with their
    host callbacks run as `callbacks` says (one mode for all, or one per program)."""
    modes = [callbacks] * len(programs) if isinstance(callbacks, Callbacks) else callbacks
    with tempfile.TemporaryDirectory(prefix="jaxfix-proof-") as workdir:
        given = [f"{mode.value}:{program}" for program, mode in zip(programs, modes, strict=True)]
        command = [python, "-m", "jaxfix.proof_runner", workdir, *given]
        completed = subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT)
    if completed.returncode != 0:
        raise RuntimeError(completed.stderr.strip() or f"exit status {completed.returncode}")
    return [
        Run(r["stdout"], tuple(r["error"]) if r["error"] else None)
        for r in json.loads(completed.stdout)
    ]


Proving = tuple[Case, Callbacks]


def run_cases(
    proving: Sequence[Proving], python: str = sys.executable
) -> dict[tuple[str, Callbacks], list[Run]]:
    """The runs of each case's programs in each mode given (by case id and mode), all in one
    fresh interpreter, in order."""
    programs = [(program, mode) for case, mode in proving for program in case.programs]
    runs = run_programs([p for p, _ in programs], python, [mode for _, mode in programs])
    found: dict[tuple[str, Callbacks], list[Run]] = {}
    for case, mode in proving:
        count = len(case.programs)
        found[case.id, mode], runs = runs[:count], runs[count:]
    return found


def problems(case: Case, runs: Sequence[Run]) -> list[str]:
    """Why the runs of `case.programs` do not prove the case (none when they do)."""
    before = runs[0]
    found: list[str] = []
    if case.before_stdout is not None:
        if before.error is not None:
            found.append(f"before.py raised {before.error[0]}: {_first_line(before.error[1])}")
        elif not same_output(before.stdout, case.before_stdout):
            found.append(f"before.py printed {before.stdout!r}, not {case.before_stdout!r}")
    elif case.error is None:
        if before.error is not None:
            found.append(f"before.py raised {before.error[0]}: {_first_line(before.error[1])}")
        elif not _prints(before, case.stdout):
            found.append(f"before.py printed {before.stdout!r}, not {case.stdout!r}")
        return found
    elif before.error is None:
        found.append(f"before.py did not fail (it printed {before.stdout!r})")
    elif before.error[0] != case.error:
        found.append(f"before.py raised {before.error[0]}, not {case.error}")
    elif case.error_match is not None and case.error_match not in before.error[1]:
        found.append(f"before.py's {case.error} does not mention {case.error_match!r}")
    if case.fixed:
        after = runs[1]
        if after.error is not None:
            found.append(f"after.py raised {after.error[0]}: {_first_line(after.error[1])}")
        elif not _prints(after, case.stdout):
            found.append(f"after.py printed {after.stdout!r}, not {case.stdout!r}")
    return found


def same_output(printed: str, expected: str) -> bool:
    """Whether `printed` reads as `expected`: the same text, its numbers within `REL_TOL`
    (or `ABS_TOL`) of the expected ones."""
    if printed == expected:
        return True
    if _NUMBER.split(printed) != _NUMBER.split(expected):
        return False
    numbers = zip(_NUMBER.findall(printed), _NUMBER.findall(expected), strict=True)
    return all(
        math.isclose(float(a), float(b), rel_tol=REL_TOL, abs_tol=ABS_TOL) for a, b in numbers
    )


def _prints(run: Run, expected: str | None) -> bool:
    return expected is not None and same_output(run.stdout, expected)


def _first_line(message: str) -> str:
    return message.strip().splitlines()[0] if message.strip() else ""
