"""Every fixture case is a proof (see STYLE.md): the exact rewrite, convergence, and under real
jax, `before.py` fails with the documented error while `after.py` runs and prints the result."""

from __future__ import annotations

import pytest

from jaxfix.engine import check_text, fix_text
from jaxfix.proofs import Case, load_cases, problems, run_programs
from jaxfix.registry import all_rules

CASES = load_cases()
RULES = all_rules()


def codes(text: str) -> list[str]:
    return [d.code for d in check_text(text, RULES)]


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


@pytest.mark.jax
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_runs_under_jax(case: Case) -> None:
    assert problems(case, run_programs(case.programs)) == []
