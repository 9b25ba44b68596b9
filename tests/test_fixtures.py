"""Every fixture case is a proof (see STYLE.md): the exact rewrite, convergence, and under real
jax, `before.py` fails with the documented error while `after.py` runs and prints the result.

The programs of one rule's selected cases run in one interpreter, as `jaxfix verify` runs them
(starting one that imports jax costs seconds; 140 of them were most of the suite's time). Under
xdist one worker runs a rule's cases (`pytest_xdist_make_scheduler` in conftest.py).
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from jaxfix.engine import fix_text
from jaxfix.proofs import Case, Run, load_cases, problems, run_cases, run_programs
from jaxfix.registry import all_rules
from tests.memo import checked

CASES = load_cases()
RULES = all_rules()


def codes(text: str) -> list[str]:
    return [d.code for d in checked(text, RULES)]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_rewrite(case: Case, request: pytest.FixtureRequest) -> None:
    before = case.before.read_text()
    assert codes(before) == case.codes
    fixed = fix_text(before, RULES, unsafe_fixes=True).text
    if request.config.getoption("--regen-fixtures") and case.fixed:
        case.after.write_text(fixed)
    if not case.fixed:
        assert fixed == before, "a case with fixed = false must be left unchanged"
        assert not case.after.exists()
        return
    after = case.after.read_text()
    assert fixed == after
    assert codes(after) == case.remaining
    assert fix_text(after, RULES, unsafe_fixes=True).text == after, "a second pass changed it"


class ProofBatches:
    """The runs of the selected cases' programs, one interpreter per rule, run on first use."""

    def __init__(self, selected: list[Case]) -> None:
        self.selected = selected
        self.runs: dict[str, list[Run]] = {}
        self.broken: set[str] = set()  # rules whose shared interpreter died

    def of(self, case: Case) -> list[Run]:
        if case.id in self.runs:
            return self.runs[case.id]
        if case.rule not in self.broken:
            batch = [c for c in self.selected if c.rule == case.rule and c.id not in self.runs]
            try:
                self.runs.update(run_cases(batch if case in batch else [case, *batch]))
                return self.runs[case.id]
            except RuntimeError:  # every case of the rule then runs alone: the culprit fails
                self.broken.add(case.rule)
        return run_programs(case.programs)


@pytest.fixture(scope="session")
def proof_batches(request: pytest.FixtureRequest) -> ProofBatches:
    selected = [
        item.callspec.params["case"]
        for item in request.session.items
        if isinstance(item, pytest.Function) and item.originalname == "test_runs_under_jax"
    ]
    return ProofBatches(selected)


@pytest.mark.jax
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_runs_under_jax(case: Case, proof_batches: ProofBatches) -> None:
    assert problems(case, proof_batches.of(case)) == []


@pytest.mark.jax
def test_a_program_does_not_change_the_next_ones_logging_or_folder(tmp_path: Path) -> None:
    """Programs share the interpreter: a `basicConfig(force=True)` to the captured stdout must
    not keep the next program's `basicConfig` from taking effect."""
    first, second = tmp_path / "first.py", tmp_path / "second.py"
    first.write_text(
        textwrap.dedent("""\
            import logging, os, sys
            logging.basicConfig(stream=sys.stdout, level=logging.INFO, force=True)
            logging.info("first")
            os.chdir("/")
            """)
    )
    second.write_text(
        textwrap.dedent("""\
            import logging, os, sys
            logging.basicConfig(stream=sys.stdout, level=logging.INFO, format="%(message)s")
            logging.info("second")
            print(os.listdir("."))
            """)
    )
    runs = run_programs([first, second])
    assert [run.error for run in runs] == [None, None]
    assert runs[0].stdout == "INFO:root:first\n"
    assert runs[1].stdout == "second\n[]\n"
