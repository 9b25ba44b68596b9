"""The real `jaxfix` command on a pseudo-terminal: `apply --interactive` answered key by key, the
progress bar and color on a terminal, plain text with NO_COLOR or without a terminal."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pexpect
import pytest

from tests.programs import CACHED, HOISTABLE

PROMPT = (
    r"Apply this fix\? \[y\]es, \[n\]o, \[a\]ll in this file, \[d\]one with this file, \[q\]uit: "
)
ESCAPE = "\x1b["

# An unsafe JF101 fix, then a safe JF102 fix, in one file.
BOTH = (
    "import functools\n"
    + HOISTABLE
    + "\n\n@functools.lru_cache\n@jax.jit\ndef f(x):\n    return x + 1\n"
)


def spawn(cwd: Path, *args: str, **env: str) -> pexpect.spawn:
    return pexpect.spawn(
        sys.executable,
        ["-m", "jaxfix", *args],
        cwd=str(cwd),
        env={**os.environ, "COLUMNS": "200", **env},
        encoding="utf-8",
        timeout=60,
        dimensions=(50, 200),
    )


def finish(child: pexpect.spawn) -> tuple[str, int]:
    child.expect(pexpect.EOF)
    child.close()
    return child.before, child.exitstatus


def review(tmp_path: Path, answers: list[str], *files: str) -> tuple[str, int]:
    """Run `apply --interactive --unsafe-fixes FILES`, answering each prompt in turn."""
    child = spawn(tmp_path, "apply", "--interactive", "--unsafe-fixes", *files, NO_COLOR="1")
    shown = []
    for answer in answers:
        child.expect(PROMPT)
        shown.append(child.before)
        child.sendline(answer)
    rest, status = finish(child)
    return "".join(shown) + rest, status


@pytest.fixture
def two_files(tmp_path: Path) -> Path:
    (tmp_path / "a.py").write_text(BOTH, encoding="utf-8")
    (tmp_path / "b.py").write_text(CACHED, encoding="utf-8")
    return tmp_path


def test_no_then_yes(two_files: Path) -> None:
    output, status = review(two_files, ["n", "y", "n"], "a.py", "b.py")
    first, second = output.split("JF102", 1)
    assert "a.py:12:18: JF101" in first and "+    jax.debug.callback(" in first
    assert "fix (unsafe): Move the serialization to a host callback" in first
    assert "-@functools.lru_cache" in second
    fixed = (two_files / "a.py").read_text(encoding="utf-8")
    assert "BLOBS.append(pickle.dumps(y))" in fixed  # declined: not offered again
    assert "lru_cache" not in fixed
    assert (two_files / "b.py").read_text(encoding="utf-8") == CACHED
    assert status == 1  # the declined findings remain
    assert "Checked 2 files: fixed 1 finding in 1 file, 2 remaining." in output


def test_all_in_this_file_then_quit(two_files: Path) -> None:
    output, status = review(two_files, ["a", "q"], "a.py", "b.py")
    fixed = (two_files / "a.py").read_text(encoding="utf-8")
    assert "jax.debug.callback(" in fixed and "lru_cache" not in fixed
    assert (two_files / "b.py").read_text(encoding="utf-8") == CACHED
    assert "b.py:6:1: JF102" in output  # asked about b.py, then quit
    assert status == 1


def test_done_with_this_file_goes_on_with_the_next(two_files: Path) -> None:
    output, status = review(two_files, ["d", "y"], "a.py", "b.py")
    assert "Checked 2 files: fixed 1 finding in 1 file, 2 remaining." in output
    assert (two_files / "a.py").read_text(encoding="utf-8") == BOTH
    assert "lru_cache" not in (two_files / "b.py").read_text(encoding="utf-8")
    assert status == 1


def test_an_unknown_answer_asks_again_and_end_of_input_quits(two_files: Path) -> None:
    child = spawn(two_files, "apply", "--interactive", "a.py", NO_COLOR="1")
    child.expect(PROMPT)
    child.sendline("maybe")
    child.expect("Please answer y, n, a, d or q.")
    child.expect(PROMPT)
    child.sendeof()
    output, status = finish(child)
    assert "Checked 1 file: fixed 0 findings in 0 files, 2 remaining (1 fixable with" in output
    assert (two_files / "a.py").read_text(encoding="utf-8") == BOTH
    assert status == 1


def test_interactive_refuses_diff_and_stdin(tmp_path: Path) -> None:
    for extra in (["--diff", "."], ["-"]):
        run = subprocess.run(
            [sys.executable, "-m", "jaxfix", "apply", "--interactive", *extra],
            cwd=tmp_path,
            capture_output=True,
            text=True,
        )
        assert run.returncode == 2
        assert "--interactive needs files to rewrite" in run.stderr


@pytest.fixture
def many_files(tmp_path: Path) -> Path:
    for index in range(25):
        (tmp_path / f"m{index:02}.py").write_text(CACHED, encoding="utf-8")
    return tmp_path


def test_a_terminal_gets_a_progress_bar_and_color(many_files: Path) -> None:
    output, status = finish(spawn(many_files, "check", "--no-cache", "."))
    assert status == 1
    assert "Checking" in output and "25/25" in output  # the bar, drawn and then cleared
    assert f"{ESCAPE}1;31mJF102{ESCAPE}0m" in output  # colored codes
    assert "Checked 25 files: 25 findings" in output
    summary = output[output.index("Checked 25 files") - 12 :]
    assert ESCAPE in summary  # a colored summary line
    # Every finding line is printed whole, on its own line (above the bar).
    plain = [line for line in output.splitlines() if "JF102" in line]
    assert len(plain) == 25
    assert all(line.rstrip().endswith(f"{ESCAPE}36m[*]{ESCAPE}0m") for line in plain)


def test_no_color_means_plain_text_on_a_terminal(many_files: Path) -> None:
    output, status = finish(spawn(many_files, "check", "--no-cache", ".", NO_COLOR="1"))
    assert status == 1
    assert ESCAPE not in output
    assert "Checking" not in output
    assert output.count("JF102") == 25


def test_without_a_terminal_the_output_is_plain(many_files: Path) -> None:
    run = subprocess.run(
        [sys.executable, "-m", "jaxfix", "check", "--no-cache", "."],
        cwd=many_files,
        capture_output=True,
        text=True,
    )
    assert run.returncode == 1
    assert ESCAPE not in run.stdout + run.stderr
    assert run.stdout.count("JF102") == 25
    assert run.stderr == "Checked 25 files: 25 findings, 25 fixable with `jaxfix apply`.\n"
