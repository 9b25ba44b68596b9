"""`jaxfix verify`: the shipped proofs re-run under the installed jax, with failures and
missing libraries told apart."""

from __future__ import annotations

import shutil
from importlib import metadata
from pathlib import Path

import pytest
from click.testing import CliRunner

from jaxfix import cli
from jaxfix.proofs.cases import fixtures_folder, load_cases
from jaxfix.proofs.verify import Verdict, verify
from jaxfix.rules.registry import all_rules

REAL = fixtures_folder() / "cache_on_traced" / "lru_cache_below_jit"
PROJECT = fixtures_folder() / "serialize_in_traced" / "harness_two_modules"


def copy_case(root: Path, name: str) -> Path:
    target = root / "cache_on_traced" / name
    shutil.copytree(REAL, target)
    return target


@pytest.mark.jax
def test_proven_failed_and_skipped_cases_are_told_apart(tmp_path: Path) -> None:
    copy_case(tmp_path, "a_proven")
    wrong = copy_case(tmp_path, "b_wrong_output")
    after = wrong / "after.py"
    after.write_text(after.read_text().replace("totals:", "sums:"))
    missing = copy_case(tmp_path, "c_missing_library")
    before = missing / "before.py"
    before.write_text("import not_an_installed_library\n" + before.read_text())
    proofs = list(verify(load_cases(tmp_path), all_rules(), jobs=2))
    verdicts = {proof.case.name: proof.verdict for proof in proofs}
    assert verdicts == {
        "a_proven": Verdict.PROVEN,
        "b_wrong_output": Verdict.FAILED,
        "c_missing_library": Verdict.SKIPPED,
    }
    reasons = {proof.case.name: proof.reasons for proof in proofs}
    assert any("rewrite of before.py is not after.py" in r for r in reasons["b_wrong_output"])
    assert any("after.py printed" in r for r in reasons["b_wrong_output"])
    assert reasons["c_missing_library"] == (
        "needs 'not_an_installed_library', which is not installed",
    )


@pytest.mark.jax
def test_the_command_proves_a_rules_fixtures() -> None:
    result = CliRunner().invoke(cli.main, ["verify", "--rule", "JF102", "-v"])
    cases = [c for c in load_cases(projects=True) if c.rule == "cache_on_traced"]
    assert result.exit_code == 0, result.output
    assert result.output.count("proven   JF102 cache_on_traced/") == len(cases)
    assert f"{len(cases)} proven, 0 failed, 0 skipped (jax " in result.output


@pytest.mark.jax
def test_a_project_case_is_rewritten_as_one_run_and_its_main_runs(tmp_path: Path) -> None:
    """A project case (before/, after/, entry main.py): jaxfix rewrites before/ into after/,
    every file; before/main.py fails as documented and after/main.py prints the result."""
    shutil.copytree(PROJECT, tmp_path / "serialize_in_traced" / "a_proven")
    wrong = tmp_path / "serialize_in_traced" / "b_wrong_helper"
    shutil.copytree(PROJECT, wrong)
    helpers = wrong / "after" / "helpers.py"
    helpers.write_text(helpers.read_text().replace("ordered=True", "ordered=False"))
    assert load_cases(tmp_path) == []  # only for the callers that ask for projects
    cases = load_cases(tmp_path, projects=True)
    assert [case.programs for case in cases] == [
        [case.directory / "before" / "main.py", case.directory / "after" / "main.py"]
        for case in cases
    ]
    proofs = {proof.case.name: proof for proof in verify(cases, all_rules(), jobs=2)}
    assert proofs["a_proven"].verdict is Verdict.PROVEN, proofs["a_proven"].reasons
    assert proofs["b_wrong_helper"].verdict is Verdict.FAILED
    assert proofs["b_wrong_helper"].reasons == ("jaxfix's rewrite of before is not after",)


def test_without_jax_it_says_how_to_get_it(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_jax(name: str) -> str:
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(metadata, "version", no_jax)
    result = CliRunner().invoke(cli.main, ["verify"])
    assert result.exit_code == 2
    assert "jaxfix verify needs jax: pip install 'jaxfix[verify]'" in result.output


def test_an_unknown_rule_is_a_usage_error() -> None:
    result = CliRunner().invoke(cli.main, ["verify", "--rule", "JF999"])
    assert result.exit_code == 2
    assert "unknown rule: JF999" in result.output
