"""jaxfix's rules as LibCST codemods, run by the real `python -m libcst.tool` on fixture copies."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from jaxfix.codemods import cache_on_traced, unused_suppression
from libcst.codemod import CodemodContext, TransformFailure, TransformSkip, transform_module

from jaxfix.proofs.cases import Case, load_cases
from jaxfix.rules.registry import all_rules
from jaxfix.run import engine

CASES = load_cases()
CONFIG = "modules:\n- jaxfix.codemods\n"  # the `.libcst.codemod.yaml` docs/integration.md documents


def sample(rule: str, *, fixed: int = 3, clean: int = 2, unfixed: int = 0) -> list[Case]:
    """A few of the rule's cases: some fixed, some look-alikes (no finding), and some with a
    finding that stays (no fix, or a suppressed one)."""
    cases = [c for c in CASES if c.rule == rule]
    return (
        [c for c in cases if c.fixed][:fixed]
        + [c for c in cases if not c.codes][:clean]
        + [c for c in cases if c.codes and not c.fixed][:unfixed]
    )


def copy_cases(folder: Path, cases: list[Case]) -> dict[Path, Case]:
    """Each case as `folder/<rule>__<case>.py`, a copy of its before.py."""
    copies = {}
    for case in cases:
        target = folder / f"{case.rule}__{case.name}.py"
        shutil.copyfile(case.before, target)
        copies[target] = case
    return copies


def libcst_tool(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`python -m libcst.tool ARGS` run in `folder`."""
    command = [sys.executable, "-m", "libcst.tool", *args]
    return subprocess.run(command, cwd=folder, capture_output=True, text=True, timeout=120)


def codemod(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`python -m libcst.tool codemod --no-format ARGS .` (no black: the fixes keep the
    file's formatting, and black is not installed)."""
    return libcst_tool(folder, "codemod", "--no-format", "--hide-progress", *args, ".")


def wrong(copies: dict[Path, Case], *, fixes_apply: bool) -> list[str]:
    """The cases whose copy is not what is expected: after.py when the case is fixed and its
    fixes apply in this run, else before.py, byte for byte."""
    found = []
    for path, case in copies.items():
        expected = case.after if case.fixed and fixes_apply else case.before
        if path.read_bytes() != expected.read_bytes():
            found.append(case.id)
    return found


def test_safe_fixes_apply_by_default_and_lookalikes_stay_byte_identical(tmp_path: Path) -> None:
    copies = copy_cases(tmp_path, sample("cache_on_traced"))
    fixed = [path for path, case in copies.items() if case.fixed]
    assert fixed and len(fixed) < len(copies), "the cases hold fixes and look-alikes"
    run = codemod(tmp_path, "-x", "jaxfix.codemods.cache_on_traced.CacheOnTracedCommand")
    assert run.returncode == 0, run.stderr
    assert wrong(copies, fixes_apply=True) == []
    assert f"Transformed {len(fixed)} files successfully" in run.stderr
    assert f"Skipped {len(copies) - len(fixed)} files" in run.stderr


def test_unsafe_fixes_apply_only_with_the_flag_and_suppressions_hold(tmp_path: Path) -> None:
    (tmp_path / ".libcst.codemod.yaml").write_text(CONFIG, encoding="utf-8")
    # The unused_suppression look-alikes hold JF101 findings that a comment suppresses.
    cases = sample("serialize_in_traced", unfixed=1) + sample("unused_suppression", clean=4)
    copies = copy_cases(tmp_path, cases)
    # The same code without its suppression comment: the finding is real, and it gets fixed.
    suppressed = next(c for c in CASES if c.id == "unused_suppression/used_on_its_line").before
    bare = tmp_path / "unsuppressed.py"
    bare.write_text(re.sub(r"  # jaxfix: ignore.*", "", suppressed.read_text()), encoding="utf-8")
    command = "serialize_in_traced.SerializeInTracedCommand"
    safe = codemod(tmp_path, command)
    assert safe.returncode == 0, safe.stderr
    assert wrong(copies, fixes_apply=False) == []
    assert re.search(r"JF101 `pickle\.dumps?` serializes a traced value", safe.stderr)
    assert "(fixable with --unsafe-fixes)" in safe.stderr
    unsafe = codemod(tmp_path, command, "--unsafe-fixes")
    assert unsafe.returncode == 0, unsafe.stderr
    assert any(case.fixed for case in copies.values())
    assert wrong(copies, fixes_apply=True) == []
    assert "jax.debug.callback(_host_pickle_dumps, x, ordered=True)" in bare.read_text()


def test_libcst_tool_lists_every_rule(tmp_path: Path) -> None:
    (tmp_path / ".libcst.codemod.yaml").write_text(CONFIG, encoding="utf-8")
    run = libcst_tool(tmp_path, "list")
    assert run.returncode == 0, run.stderr
    for rule in all_rules():
        module = rule.__module__.rsplit(".", 1)[1]
        assert f"{module}.{rule.__name__}Command - {rule.code} {rule.name}: " in run.stdout


def test_importing_the_rules_does_not_import_libcst_codemod() -> None:
    script = (
        "import sys\n"
        "from jaxfix.rules.registry import all_rules\n"
        "all_rules()\n"
        "print('libcst.codemod' in sys.modules)\n"
    )
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert run.stdout == "False\n", run.stderr


def test_a_fix_error_fails_the_file(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*args: object, **kwargs: object) -> engine.Result:
        raise engine.FixError("fix for JF102 produced invalid code")

    monkeypatch.setattr(engine, "run_text", broken)
    source = next(c for c in CASES if c.rule == "cache_on_traced" and c.fixed).before.read_text()
    result = transform_module(cache_on_traced.CacheOnTracedCommand(CodemodContext()), source)
    assert isinstance(result, TransformFailure)
    assert isinstance(result.error, engine.FixError)


def test_a_rule_without_a_fix_only_warns() -> None:
    case = next(c for c in CASES if c.id == "unused_suppression/unknown_rule")
    command = unused_suppression.UnusedSuppressionCommand(CodemodContext())
    result = transform_module(command, case.before.read_text())
    assert isinstance(result, TransformSkip)
    assert [w for w in result.warning_messages if ": JF001 unused suppression" in w]


def test_the_project_configuration_applies(tmp_path: Path) -> None:
    program = (
        "import pickle\n\nimport jax\nimport my_lib\n\nBLOBS = []\n\n\n"
        "@my_lib.compiled\ndef step(x):\n    BLOBS.append(pickle.dumps(x))\n    return x\n"
    )
    (tmp_path / "step.py").write_text(program, encoding="utf-8")
    name = "jaxfix.codemods.serialize_in_traced.SerializeInTracedCommand"
    assert codemod(tmp_path, "-x", name).returncode == 0
    assert (tmp_path / "step.py").read_text(encoding="utf-8") == program
    (tmp_path / "pyproject.toml").write_text(
        "[tool.jaxfix]\ntransforms = ['my_lib.compiled']\nunsafe-fixes = true\n"
    )
    run = codemod(tmp_path, "-x", name)
    assert run.returncode == 0, run.stderr
    assert "jax.debug.callback(_host_pickle_dumps, x, ordered=True)" in (
        tmp_path / "step.py"
    ).read_text(encoding="utf-8")
