"""`--project-context`: the paths' findings computed with the project's other Python files in
the run (read, not reported), as the pre-commit hooks run it on the staged files only."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from jaxfix.cli import main

SAVER = """\
import pickle


def save_blob(log, value):
    log.append(pickle.dumps(value))
"""

TRAINER = """\
import jax
from pkg.io import save_blob

LOG = []


@jax.jit
def step(x):
    save_blob(LOG, x)
    return x
"""

ENCODER = """\
import pickle

import jax


@jax.jit
def encode(x):
    return pickle.dumps(x * 2)
"""

USER = """\
import jax.numpy as jnp
from pkg.enc import encode


def main():
    blob = encode(jnp.ones(2))
"""


def project(root: Path, files: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> Path:
    """The files under `root`, the working folder (the project's root)."""
    for name, text in {"pkg/__init__.py": "", **files}.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(textwrap.dedent(text))
    monkeypatch.chdir(root)
    return root


def invoke(*args: str) -> Result:
    return CliRunner().invoke(main, ["--no-cache" if a == "NC" else a for a in args])


def texts(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): p.read_text() for p in sorted(root.rglob("*.py"))}


def test_a_helper_is_reported_because_of_a_caller_read_for_context(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project(tmp_path, {"pkg/io.py": SAVER, "pkg/train.py": TRAINER}, monkeypatch)
    alone = invoke("check", "NC", "pkg/io.py")
    assert alone.exit_code == 0, alone.output
    result = invoke("check", "NC", "--project-context", "pkg/io.py")
    assert result.exit_code == 1, result.output
    assert result.stdout.startswith("pkg/io.py:5:16: JF101 ")
    assert "(called from traced `pkg.train.step`)" in result.stdout
    assert "pkg/train.py" not in result.stdout
    assert "Checked 1 file: 1 finding" in result.stderr


def test_the_context_files_findings_are_neither_reported_nor_fixed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = project(tmp_path, {"pkg/io.py": SAVER, "pkg/train.py": TRAINER}, monkeypatch)
    before = texts(root)
    result = invoke("apply", "NC", "--unsafe-fixes", "--project-context", "pkg/train.py")
    assert result.exit_code == 0, result.output
    assert "pkg/io.py" not in result.output
    assert "Checked 1 file: fixed 0 findings in 0 files, 0 remaining." in result.stderr
    assert texts(root) == before


def test_the_excludes_keep_a_file_out_of_the_context(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = {"pkg/io.py": SAVER, "pkg/train.py": TRAINER}
    files["pyproject.toml"] = '[tool.jaxfix]\nextend-exclude = ["pkg/train.py"]\n'
    project(tmp_path, files, monkeypatch)
    result = invoke("check", "NC", "--project-context", "pkg/io.py")
    assert result.exit_code == 0, result.output


def test_a_fix_over_several_files_changes_the_context_file_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The reported file's fix rewrites the call sites in the file read for context: both are
    written, and the fix's title names the other file."""
    root = project(tmp_path, {"pkg/enc.py": ENCODER, "pkg/use.py": USER}, monkeypatch)
    checked = invoke("check", "NC", "--project-context", "pkg/enc.py")
    assert "it also changes pkg/use.py" in checked.stdout
    result = invoke("apply", "NC", "--unsafe-fixes", "--project-context", "pkg/enc.py")
    assert result.exit_code == 0, result.output
    assert "Checked 1 file: fixed 1 finding in 2 files, 0 remaining." in result.stderr
    assert "pickle" not in (root / "pkg/enc.py").read_text()
    assert (
        "blob = pickle.dumps(jax.device_get(encode(jnp.ones(2))))"
        in (root / "pkg/use.py").read_text()
    )


def test_a_context_files_fix_over_several_files_is_withheld_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`encode`'s fix belongs to the file read for context: its call site in the reported file
    is not rewritten either."""
    root = project(tmp_path, {"pkg/enc.py": ENCODER, "pkg/use.py": USER}, monkeypatch)
    before = texts(root)
    result = invoke("apply", "NC", "--unsafe-fixes", "--project-context", "pkg/use.py")
    assert result.exit_code == 0, result.output
    assert texts(root) == before
