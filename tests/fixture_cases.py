"""The fixture cases under tests/fixtures/<rule>/<case>/, loaded from their expect.toml."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path

FIXTURES = Path(__file__).parent / "fixtures"
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


def load_cases() -> list[Case]:
    cases = []
    for directory in sorted(FIXTURES.glob("*/*/")):
        data = tomllib.loads((directory / "expect.toml").read_text())
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
