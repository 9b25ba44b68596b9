"""`jaxfix verify`: prove every shipped rewrite again under the jax the user has installed.

For each fixture case: jaxfix still reports the case's codes and rewrites `before.py` into
`after.py` exactly, and under jax `before.py` fails as documented while `after.py` runs and
prints the expected output (`jaxfix.proofs`). Host callbacks are deferred to the next
`jax.effects_barrier()` by default, as an accelerator may defer them, so that a rewrite that
reads a callback's result too early fails on a CPU too. A case whose program imports a library
that is not installed (cloudpickle, joblib, ...) is skipped, not failed. The cases of one rule
run in one interpreter; rules run in parallel.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from enum import Enum

from jaxfix.proofs import Callbacks, Case, Run, problems, run_cases
from jaxfix.rule import Rule

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
    """Whether jaxfix still finds what the case says and rewrites it into after.py."""
    from jaxfix.engine import check_text, fix_text

    before = case.before.read_text(encoding="utf-8")
    found: list[str] = []
    codes = [d.code for d in check_text(before, rules)]
    if codes != case.codes:
        found.append(f"jaxfix reports {codes} in before.py, not {case.codes}")
    fixed = fix_text(before, rules, unsafe_fixes=True).text
    expected = case.after.read_text(encoding="utf-8") if case.fixed else before
    if fixed != expected:
        found.append("jaxfix's rewrite of before.py is not after.py")
    return found
