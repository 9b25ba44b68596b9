"""`jaxfix verify`: prove every shipped rewrite again under the jax the user has installed.

For each fixture case: jaxfix still reports the case's codes and rewrites `before.py` into
`after.py` exactly (a project case's `before/` into `after/`, every file, as one run of
`jaxfix apply` over the folder: `check_project`, `fix_project`), and under jax `before.py`
fails as documented while `after.py` runs and prints the expected output (`jaxfix.proofs.cases`).
Host callbacks are deferred to the next `jax.effects_barrier()` by default, as an accelerator
may defer them, so that a rewrite that reads a callback's result too early fails on a CPU too.
A case whose program imports a library that is not installed (cloudpickle, joblib, ...) is
skipped, not failed. The cases of one rule run in one interpreter; rules run in parallel.
"""

from __future__ import annotations

import re
import shutil
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

from jaxfix.proofs.cases import Callbacks, Case, Run, problems, run_cases, sources
from jaxfix.rules.rule import Rule
from jaxfix.run.config import Overrides
from jaxfix.run.engine import run_text
from jaxfix.run.outcome import Outcome
from jaxfix.run.session import RunOptions, finder_for, outcomes
from jaxfix.run.sourcefile import write_source_atomic

_MISSING = re.compile(r"No module named '([\w.]+)'")


class Verdict(Enum):
    PROVEN = "proven"
    FAILED = "failed"
    SKIPPED = "skipped"


@dataclass(frozen=True)
class Proof:
    """What verifying one case found."""

    case: Case
    verdict: Verdict
    reasons: tuple[str, ...] = ()


def rule_of(case: Case, rules: Iterable[type[Rule]]) -> type[Rule] | None:
    """The rule whose fixture folder holds `case`."""
    return next((r for r in rules if r.name.replace("-", "_") == case.rule), None)


def verify(
    cases: Sequence[Case],
    rules: Sequence[type[Rule]],
    jobs: int,
    callbacks: Callbacks = Callbacks.DEFERRED,
) -> Iterator[Proof]:
    """The proof of every case, one rule's cases after another (in `cases` order), with host
    callbacks run as `callbacks` says."""
    by_rule: dict[str, list[Case]] = {}
    for case in cases:
        by_rule.setdefault(case.rule, []).append(case)
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        futures = [pool.submit(_verify_rule, group, rules, callbacks) for group in by_rule.values()]
        for future in futures:
            yield from future.result()


def _verify_rule(
    cases: Sequence[Case], rules: Sequence[type[Rule]], callbacks: Callbacks
) -> list[Proof]:
    try:
        runs = run_cases([(case, callbacks) for case in cases])
    except Exception as error:  # the interpreter itself failed: every case of the rule fails
        reason = f"the programs could not be run: {error}"
        return [Proof(case, Verdict.FAILED, (reason,)) for case in cases]
    return [_judge(case, runs[case.id, callbacks], rules) for case in cases]


def _judge(case: Case, runs: Sequence[Run], rules: Sequence[type[Rule]]) -> Proof:
    missing = _missing_module(case, runs)
    if missing is not None:
        return Proof(case, Verdict.SKIPPED, (f"needs {missing!r}, which is not installed",))
    found = _rewrite_problems(case, rules) + problems(case, runs)
    return Proof(case, Verdict.FAILED if found else Verdict.PROVEN, tuple(found))


def _missing_module(case: Case, runs: Sequence[Run]) -> str | None:
    for run in runs:
        if run.error is not None and run.error[0] == "ModuleNotFoundError" != case.error:
            match = _MISSING.search(run.error[1])
            return match.group(1) if match else "a module"
    return None


def _rewrite_problems(case: Case, rules: Sequence[type[Rule]]) -> list[str]:
    """Whether jaxfix still finds what the case says and rewrites it into after.py (or after/)."""
    expected = case.after if case.fixed else case.before
    if case.project:
        codes = check_project(case.before, rules)
        fixed, wanted = fix_project(case.before, rules), sources(expected)
    else:
        before = case.before.read_text(encoding="utf-8")
        codes = [d.code for d in run_text(before, rules).diagnostics]
        fixed = {"": run_text(before, rules, fix=True, unsafe_fixes=True).text}
        wanted = {"": expected.read_text(encoding="utf-8")}
    found: list[str] = []
    if codes != case.codes:
        found.append(f"jaxfix reports {codes} in {case.before.name}, not {case.codes}")
    if fixed != wanted:
        found.append(f"jaxfix's rewrite of {case.before.name} is not {case.after.name}")
    return found


def check_project(folder: Path, rules: Sequence[type[Rule]]) -> list[str]:
    """The codes `jaxfix check` reports in the project `folder` with `rules` (its files in
    path order, each one's findings in line order), as one run: the modules trace each other."""
    with tempfile.TemporaryDirectory(prefix="jaxfix-case-") as scratch:
        copy = _copied(folder, Path(scratch))
        found = sorted(
            (Path(outcome.display).relative_to(copy).as_posix(), d.line, d.column, d.code)
            for outcome in _outcomes(copy, rules, fix=False)
            for d in outcome.diagnostics
        )
    return [code for *_, code in found]


def fix_project(folder: Path, rules: Sequence[type[Rule]]) -> dict[str, str]:
    """The Python files of the project `folder` (`sources`) once `jaxfix apply --unsafe-fixes`
    with `rules` has rewritten them, as one run over the folder (a copy: `folder` is left)."""
    with tempfile.TemporaryDirectory(prefix="jaxfix-case-") as scratch:
        copy = _copied(folder, Path(scratch))
        for outcome in _outcomes(copy, rules, fix=True):
            if outcome.error:
                raise RuntimeError(outcome.error)
            if outcome.new_text is not None and outcome.source is not None:
                write_source_atomic(outcome.source, outcome.new_text)
        return sources(copy)


def _copied(folder: Path, scratch: Path) -> Path:
    """A copy of the project `folder` (its Python files) in `scratch`, under the same name."""
    copy = scratch / folder.name
    for name in sources(folder):
        (copy / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(folder / name, copy / name)
    return copy


def _outcomes(folder: Path, rules: Sequence[type[Rule]], *, fix: bool) -> list[Outcome]:
    """One run of `jaxfix check` (or `apply --unsafe-fixes`) over `folder`: no configuration
    file, no cache, the `rules` named."""
    overrides = Overrides(select=tuple(rule.code for rule in rules), unsafe_fixes=True)
    options = RunOptions(
        jobs=1, no_cache=True, cache_dir=None, config=None, isolated=True, stdin_filename=None
    )
    finder = finder_for(overrides, options)
    return list(outcomes([str(folder)], finder, options, fix=fix, edits=False))
