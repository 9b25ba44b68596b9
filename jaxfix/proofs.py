"""The shipped fixture cases, and the proof each one gives under the installed jax.

A case is `<fixtures>/<rule module>/<case>/` with `before.py`, `expect.toml` and, when jaxfix
rewrites it, `after.py`. Its proof, judged here for both the test suite and `jaxfix verify`:
`before.py` raises the documented exception (or, with `before_stdout`, runs and prints that),
and `after.py` runs and prints `stdout`. The programs run under jax in a subprocess
(`jaxfix.proof_runner`), so this module never imports jax.
"""

from __future__ import annotations

import json
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


def run_programs(programs: Sequence[Path], python: str = sys.executable) -> list[Run]:
    """Run `programs` under jax in one fresh interpreter (jax is imported once)."""
    with tempfile.TemporaryDirectory(prefix="jaxfix-proof-") as workdir:
        command = [python, "-m", "jaxfix.proof_runner", workdir, *map(str, programs)]
        completed = subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT)
    if completed.returncode != 0:
        raise RuntimeError(completed.stderr.strip() or f"exit status {completed.returncode}")
    return [
        Run(r["stdout"], tuple(r["error"]) if r["error"] else None)
        for r in json.loads(completed.stdout)
    ]


def run_cases(cases: Sequence[Case], python: str = sys.executable) -> dict[str, list[Run]]:
    """The runs of every case's programs (by case id), all in one fresh interpreter, in order."""
    runs = run_programs([program for case in cases for program in case.programs], python)
    found: dict[str, list[Run]] = {}
    for case in cases:
        found[case.id], runs = runs[: len(case.programs)], runs[len(case.programs) :]
    return found


def problems(case: Case, runs: Sequence[Run]) -> list[str]:
    """Why the runs of `case.programs` do not prove the case (none when they do)."""
    before = runs[0]
    found: list[str] = []
    if case.before_stdout is not None:
        if before.error is not None:
            found.append(f"before.py raised {before.error[0]}: {_first_line(before.error[1])}")
        elif before.stdout != case.before_stdout:
            found.append(f"before.py printed {before.stdout!r}, not {case.before_stdout!r}")
    elif case.error is None:
        if before.error is not None:
            found.append(f"before.py raised {before.error[0]}: {_first_line(before.error[1])}")
        elif before.stdout != case.stdout:
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
        elif after.stdout != case.stdout:
            found.append(f"after.py printed {after.stdout!r}, not {case.stdout!r}")
    return found


def _first_line(message: str) -> str:
    return message.strip().splitlines()[0] if message.strip() else ""
