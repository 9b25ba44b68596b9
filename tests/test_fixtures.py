"""Every fixture case is a proof (see STYLE.md): the exact rewrite, convergence, and under real
jax, `before.py` fails with the documented error while `after.py` runs and prints the result."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from jaxfix.engine import check_text, fix_text
from jaxfix.registry import all_rules
from tests.fixture_cases import Case, load_cases

CASES = load_cases()
RULES = all_rules()
RUNNER = Path(__file__).parent / "run_programs.py"


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
def test_runs_under_jax(case: Case, tmp_path: Path) -> None:
    programs = [case.before] + ([case.after] if case.fixed else [])
    completed = subprocess.run(
        [sys.executable, str(RUNNER), str(tmp_path), *map(str, programs)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert completed.returncode == 0, completed.stderr
    results = json.loads(completed.stdout)
    before = results[0]
    if case.before_stdout is not None:
        assert case.error is None and case.fixed, "before_stdout is for a fixed case that runs"
        assert before["error"] is None, before["error"]
        assert before["stdout"] == case.before_stdout
    elif case.error is None:
        assert before["error"] is None, before["error"]
        assert before["stdout"] == case.stdout
        return
    else:
        assert before["error"] is not None, f"before.py did not fail; printed {before['stdout']!r}"
        kind, message = before["error"]
        assert kind == case.error, message
        assert case.error_match is None or case.error_match in message
    if case.fixed:
        after = results[1]
        assert after["error"] is None, after["error"][1]
        assert after["stdout"] == case.stdout
