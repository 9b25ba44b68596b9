"""Bad input through the real command line: every problem file gets one `error: <path>...` line
on stderr, the other files are still processed, the exit code is 2, nothing is written that
should not be, and no traceback ever reaches the user.

Each case puts the problem file next to `good.py`, a valid file with one fixable finding, and runs
the command line (cwd = the test's folder) with `check` and with `apply --unsafe-fixes`: through
click in this process (an exception escaping it fails the test), or, where the process itself is
at stake (its stack, or a read that could block), `python -m jaxfix` in a subprocess.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import re
import resource
import signal
import stat
import subprocess
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from jaxfix import cli as jaxfix_cli
from jaxfix.run import runner
from jaxfix.run.outcome import Outcome
from jaxfix.run.runner import load, run
from jaxfix.run.sourcefile import SourceFile
from tests.programs import large_module

GOOD_NAME = "good.py"
GOOD = """\
import pickle
import jax
BLOBS = []
@jax.jit
def step(x):
    BLOBS.append(pickle.dumps(x))
    return x
"""
GOOD_FINDING = f"{GOOD_NAME}:6:18: JF101 `pickle.dumps` serializes a traced value inside `step`"
GOOD_FIXED = "jax.debug.callback(_host_pickle_dumps, x, ordered=True)"

COMMANDS = {
    "check": ["check"],
    "apply-unsafe": ["apply", "--unsafe-fixes"],
}

Snapshot = dict[str, tuple[bytes, int] | None]


# --- helpers


def run_jaxfix(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Run the real CLI through click in this process (a subprocess costs half a second)."""
    with contextlib.chdir(cwd):
        result = CliRunner().invoke(jaxfix_cli.main, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exc_info
    return subprocess.CompletedProcess(args, result.exit_code, result.stdout, result.stderr)


def run_jaxfix_process(
    cwd: Path,
    *args: str,
    preexec_fn: Callable[[], object] | None = None,
    timeout: float | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run the real CLI in a subprocess, as a user would."""
    return subprocess.run(
        [sys.executable, "-m", "jaxfix", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        errors="replace",
        stdin=subprocess.DEVNULL,
        preexec_fn=preexec_fn,
        timeout=timeout,
        check=False,
    )


def write_good(directory: Path) -> Path:
    path = directory / GOOD_NAME
    path.write_text(GOOD, encoding="utf-8")
    return path


def snapshot(root: Path) -> Snapshot:
    """Bytes and mode of every regular file under ``root`` (links and specials by their lstat)."""
    found: Snapshot = {}
    for dirpath, dirnames, filenames in os.walk(root):  # does not follow directory symlinks
        for name in [*dirnames, *filenames]:
            path = Path(dirpath, name)
            st = os.lstat(path)
            if stat.S_ISREG(st.st_mode):
                found[str(path.relative_to(root))] = (path.read_bytes(), stat.S_IMODE(st.st_mode))
            elif not stat.S_ISDIR(st.st_mode):
                found[str(path.relative_to(root))] = (b"", stat.S_IFMT(st.st_mode))
    return found


def without(files: Snapshot, names: Iterable[str]) -> Snapshot:
    skip = set(names)
    return {name: value for name, value in files.items() if name not in skip}


def stderr_lines(stderr: str) -> list[str]:
    assert "Traceback" not in stderr, stderr
    lines = stderr.splitlines()
    assert lines, "no summary line on stderr"
    assert lines[-1].startswith("Checked "), stderr
    return lines


def assert_one_error(stderr: str, name: str) -> str:
    """Exactly one error line, naming ``name``; everything else on stderr is the summary."""
    lines = stderr_lines(stderr)
    assert len(lines) == 2, f"expected one error line and the summary, got:\n{stderr}"
    error = lines[0]
    assert error.startswith(f"error: {name}:"), error
    assert "1 error" in lines[1], lines[1]
    return error


def assert_no_error(stderr: str) -> None:
    lines = stderr_lines(stderr)
    assert len(lines) == 1, stderr
    assert "error" not in lines[0], lines[0]


def assert_good_processed(tmp_path: Path, command: str, stdout: str) -> None:
    """The valid neighbour was still checked (its finding printed) or fixed (rewritten)."""
    good = (tmp_path / GOOD_NAME).read_text(encoding="utf-8")
    if command == "check":
        assert GOOD_FINDING in stdout, stdout
        assert good == GOOD
    else:
        assert GOOD_FIXED in good, good


def expected_clean_exit(command: str) -> int:
    """Exit code when the only other file is `good.py`: check finds it, apply fixes it."""
    return 1 if command == "check" else 0


# --- files that cannot be read, decoded or parsed


@dataclass(frozen=True)
class BadFile:
    name: str
    data: bytes
    message: str  # what the error line must contain after the path


BAD_FILES = [
    BadFile(
        "syntax.py",
        b"import pickle\nimport jax\npickle.dumps(\n",
        "syntax error: '(' was never closed",
    ),
    BadFile(  # no rule can fire in it: reported all the same (see the test below)
        "plain_syntax.py",
        b"def f(:\n    pass\n",
        "syntax error: invalid syntax",
    ),
    BadFile(
        "not_utf8.py",
        b"import pickle\nimport jax\n# caf\xe9\npickle.dumps(1)\n",
        "cannot decode as utf-8: invalid byte 0xe9",
    ),
    BadFile(
        "nul.py",
        b"import pickle\nimport jax\x00\npickle.dumps(1)\n",
        "contains NUL bytes",
    ),
]


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("bad", BAD_FILES, ids=[bad.name for bad in BAD_FILES])
def test_unparsable_file_is_one_error_and_the_rest_still_runs(
    tmp_path: Path, bad: BadFile, command: str
) -> None:
    (tmp_path / bad.name).write_bytes(bad.data)
    os.chmod(tmp_path / bad.name, 0o640)
    write_good(tmp_path)
    before = snapshot(tmp_path)
    result = run_jaxfix(tmp_path, *COMMANDS[command], bad.name, GOOD_NAME)
    error = assert_one_error(result.stderr, bad.name)
    assert bad.message in error
    assert result.returncode == 2
    assert_good_processed(tmp_path, command, result.stdout)
    after = snapshot(tmp_path)
    assert without(after, [GOOD_NAME]) == without(before, [GOOD_NAME])


@pytest.mark.parametrize("command", COMMANDS)
def test_bad_files_found_by_walking_a_directory(tmp_path: Path, command: str) -> None:
    for bad in BAD_FILES:
        (tmp_path / bad.name).write_bytes(bad.data)
    write_good(tmp_path)
    before = snapshot(tmp_path)
    result = run_jaxfix(tmp_path, *COMMANDS[command], ".")
    lines = stderr_lines(result.stderr)
    errors = sorted(line for line in lines if line.startswith("error: "))
    assert len(errors) == len(BAD_FILES) == len(lines) - 1, result.stderr
    for error, bad in zip(errors, sorted(BAD_FILES, key=lambda b: b.name), strict=True):
        assert error.startswith(f"error: {bad.name}:") and bad.message in error, error
    assert result.returncode == 2
    if command == "check":
        assert f"{GOOD_NAME}:6:18: JF101" in result.stdout
    else:
        assert GOOD_FIXED in (tmp_path / GOOD_NAME).read_text(encoding="utf-8")
    assert without(snapshot(tmp_path), [GOOD_NAME]) == without(before, [GOOD_NAME])


PLAIN_SYNTAX_ERROR = "def f(:\n    pass\n"  # never mentions jax nor a rule's anchor


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("select", [[], ["--select", "JF102"]], ids=["all-rules", "JF102"])
@pytest.mark.parametrize("given", ["file", "stdin"])
def test_a_syntax_error_is_reported_in_every_input(
    tmp_path: Path, command: str, select: list[str], given: str
) -> None:
    """Whether or not a rule could fire in it, read from a file or from standard input, a file
    Python rejects is one error and exit 2 (as Ruff reports every syntax error)."""
    (tmp_path / "plain.py").write_text(PLAIN_SYNTAX_ERROR, encoding="utf-8")
    args = [*COMMANDS[command], *select, "--no-cache"]
    if given == "file":
        result = run_jaxfix(tmp_path, *args, "plain.py")
    else:
        result = subprocess.run(
            [sys.executable, "-m", "jaxfix", *args, "--stdin-filename", "plain.py", "-"],
            cwd=tmp_path,
            input=PLAIN_SYNTAX_ERROR,
            capture_output=True,
            text=True,
            check=False,
        )
    error = assert_one_error(result.stderr, "plain.py")
    assert error == "error: plain.py:1:7: syntax error: invalid syntax"
    assert result.returncode == 2
    assert (tmp_path / "plain.py").read_text(encoding="utf-8") == PLAIN_SYNTAX_ERROR
    if given == "stdin" and command != "check":
        assert result.stdout == PLAIN_SYNTAX_ERROR  # `apply -` gives its input back unchanged


# --- valid but unusual files


LATIN1 = "# -*- coding: latin-1 -*-\n# café\n" + GOOD


def test_latin1_coding_line_is_checked(tmp_path: Path) -> None:
    (tmp_path / "latin.py").write_bytes(LATIN1.encode("latin-1"))
    write_good(tmp_path)
    result = run_jaxfix(tmp_path, "check", "latin.py", GOOD_NAME)
    assert_no_error(result.stderr)
    assert "latin.py:8:18: JF101 `pickle.dumps`" in result.stdout
    assert GOOD_FINDING in result.stdout
    assert result.returncode == 1


def test_latin1_coding_line_is_fixed_keeping_encoding_and_mode(tmp_path: Path) -> None:
    path = tmp_path / "latin.py"
    path.write_bytes(LATIN1.encode("latin-1"))
    os.chmod(path, 0o640)
    write_good(tmp_path)
    result = run_jaxfix(tmp_path, "apply", "--unsafe-fixes", "latin.py", GOOD_NAME)
    assert_no_error(result.stderr)
    assert result.returncode == 0
    data = path.read_bytes()
    assert data.startswith(b"# -*- coding: latin-1 -*-\n# caf\xe9\n")
    text = data.decode("latin-1")
    assert GOOD_FIXED in text
    assert "pickle.dumps(jax.device_get(x))" in text
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o640
    assert GOOD_FIXED in (tmp_path / GOOD_NAME).read_text(encoding="utf-8")


@pytest.mark.parametrize("command", COMMANDS)
def test_empty_file_is_valid(tmp_path: Path, command: str) -> None:
    (tmp_path / "empty.py").write_bytes(b"")
    write_good(tmp_path)
    result = run_jaxfix(tmp_path, *COMMANDS[command], "empty.py", GOOD_NAME)
    assert_no_error(result.stderr)
    assert "Checked 2 files" in result.stderr
    assert result.returncode == expected_clean_exit(command)
    assert_good_processed(tmp_path, command, result.stdout)
    assert (tmp_path / "empty.py").read_bytes() == b""


def test_a_megabyte_file_is_checked(tmp_path: Path) -> None:
    """Thousands of small untraced functions and one finding at the end; only correctness is
    asserted (`benchmarks/bench.py` times a 5 MB module)."""
    text = large_module(1024 * 1024)
    (tmp_path / "big.py").write_text(text, encoding="utf-8")
    write_good(tmp_path)
    lines = text.count("\n")
    result = run_jaxfix(tmp_path, "check", "big.py", GOOD_NAME)
    assert_no_error(result.stderr)
    assert result.stdout.splitlines()[::2] == [
        f"big.py:{lines - 1}:18: JF101 `pickle.dumps` serializes a traced value inside `last` "
        "(decorated with `jax.jit`)",  # an unsafe fix: no `[*]` without `--unsafe-fixes`
        f"{GOOD_FINDING} (decorated with `jax.jit`)",
    ]
    assert result.returncode == 1


# --- deeply nested expressions


DEEP_PARENS_MODULE = "import pickle\nimport jax\nx = " + "(" * 1000 + "1" + ")" * 1000 + "\n"
DEEP_PARENS_MODULE += "pickle.dumps(x)\n"
DEEP_PARENS_TRACED = GOOD.replace(
    "    BLOBS.append", "    x = " + "(" * 1000 + "x" + ")" * 1000 + "\n    BLOBS.append"
)
# Valid Python (CPython compiles it), but too deep for LibCST: reported, not analysed.
LONG_SUM_TRACED = GOOD.replace(
    "    BLOBS.append", "    x = " + " + ".join(["x"] * 5000) + "\n    BLOBS.append"
)

# Deeper than the analysis itself can follow: said where, as for LibCST.
HUGE_SUM_TRACED = GOOD.replace(
    "    BLOBS.append", "    y = " + " + ".join(["x"] * 50_000) + "\n    BLOBS.append"
)


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize(
    ("text", "message"),
    [
        (DEEP_PARENS_MODULE, "deep.py:3:205: syntax error: too many nested parentheses"),
        (DEEP_PARENS_TRACED, "deep.py:6:209: syntax error: too many nested parentheses"),
        (LONG_SUM_TRACED, "deep.py:6:5: nested more than 1000 levels deep: not analysed"),
        (HUGE_SUM_TRACED, "deep.py:6:5: nested more than 1000 levels deep: not analysed"),
    ],
    ids=[
        "parens-module-level",
        "parens-in-jitted-function",
        "5000-term-sum-in-jitted-function",
        "50000-term-sum-in-jitted-function",
    ],
)
def test_deeply_nested_expression_is_one_error(
    tmp_path: Path, text: str, message: str, command: str
) -> None:
    (tmp_path / "deep.py").write_text(text, encoding="utf-8")
    write_good(tmp_path)
    before = snapshot(tmp_path)
    result = run_jaxfix(tmp_path, *COMMANDS[command], "deep.py", GOOD_NAME)
    assert result.returncode == 2
    assert assert_one_error(result.stderr, "deep.py") == f"error: {message}"
    assert_good_processed(tmp_path, command, result.stdout)
    assert without(snapshot(tmp_path), [GOOD_NAME]) == without(before, [GOOD_NAME])


def _eight_megabyte_stack() -> None:
    """The usual default, so that the outcome does not depend on the caller's ulimit."""
    _soft, hard = resource.getrlimit(resource.RLIMIT_STACK)
    limit = 8 * 1024 * 1024
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_STACK, (limit, hard))


@pytest.mark.parametrize("command", COMMANDS)
def test_very_deep_unary_nesting_does_not_crash(tmp_path: Path, command: str) -> None:
    text = "import pickle\nimport jax\nx = " + "-" * 100_000 + "1\npickle.dumps(x)\n"
    (tmp_path / "deep.py").write_text(text, encoding="utf-8")
    write_good(tmp_path)
    before = snapshot(tmp_path)
    result = run_jaxfix_process(
        tmp_path,
        *COMMANDS[command],
        "deep.py",
        GOOD_NAME,
        preexec_fn=_eight_megabyte_stack,
        timeout=600,
    )
    assert result.returncode == 2, (result.returncode, result.stderr[-2000:])
    assert_one_error(result.stderr, "deep.py")
    assert_good_processed(tmp_path, command, result.stdout)
    assert without(snapshot(tmp_path), [GOOD_NAME]) == without(before, [GOOD_NAME])


# --- paths that are not plain readable files


@pytest.mark.parametrize("command", COMMANDS)
def test_directory_named_like_a_python_file_is_walked_not_read(
    tmp_path: Path, command: str
) -> None:
    """`x.py/` is a directory: it is walked (explicitly or during a walk), never read as a file."""
    (tmp_path / "x.py").mkdir()
    (tmp_path / "x.py" / "inner.py").write_text(GOOD, encoding="utf-8")
    (tmp_path / "x.py" / "empty.py").mkdir()
    write_good(tmp_path)
    for args in (["x.py", GOOD_NAME], ["."]):
        (tmp_path / "x.py" / "inner.py").write_text(GOOD, encoding="utf-8")
        write_good(tmp_path)
        result = run_jaxfix(tmp_path, *COMMANDS[command], *args)
        assert_no_error(result.stderr)
        assert "Checked 2 files" in result.stderr
        assert result.returncode == expected_clean_exit(command)
        assert_good_processed(tmp_path, command, result.stdout)
        inner = (tmp_path / "x.py" / "inner.py").read_text(encoding="utf-8")
        if command == "check":
            assert os.path.join("x.py", "inner.py") + ":6:18: JF101" in result.stdout
        else:
            assert GOOD_FIXED in inner
        assert (tmp_path / "x.py" / "empty.py").is_dir()


@pytest.mark.parametrize("command", COMMANDS)
def test_directory_symlink_to_its_parent_is_not_followed(tmp_path: Path, command: str) -> None:
    os.symlink("..", tmp_path / "up")
    os.symlink(".", tmp_path / "self.py")
    write_good(tmp_path)
    result = run_jaxfix_process(tmp_path, *COMMANDS[command], ".", timeout=600)
    assert_no_error(result.stderr)
    assert "Checked 1 file" in result.stderr
    assert result.returncode == expected_clean_exit(command)
    assert_good_processed(tmp_path, command, result.stdout)
    assert result.stdout.count("JF101") == (1 if command == "check" else 0)
    assert os.readlink(tmp_path / "up") == ".."


@pytest.mark.parametrize("walk", [False, True], ids=["explicit", "walked"])
@pytest.mark.parametrize("command", COMMANDS)
def test_file_symlink_loop_is_one_error(tmp_path: Path, command: str, walk: bool) -> None:
    os.symlink("loop_b.py", tmp_path / "loop_a.py")
    os.symlink("loop_a.py", tmp_path / "loop_b.py")
    write_good(tmp_path)
    before = snapshot(tmp_path)
    args = ["."] if walk else ["loop_a.py", GOOD_NAME]
    result = run_jaxfix(tmp_path, *COMMANDS[command], *args)
    lines = stderr_lines(result.stderr)
    errors = [line for line in lines if line.startswith("error: ")]
    expected = ["loop_a.py", "loop_b.py"] if walk else ["loop_a.py"]
    assert errors == [f"error: {name}: symlink loop" for name in expected], result.stderr
    assert len(lines) == len(errors) + 1
    assert result.returncode == 2
    assert_good_processed(tmp_path, command, result.stdout)
    assert without(snapshot(tmp_path), [GOOD_NAME]) == without(before, [GOOD_NAME])


@pytest.mark.parametrize("command", COMMANDS)
def test_fifo_is_not_read_and_does_not_block(tmp_path: Path, command: str) -> None:
    os.mkfifo(tmp_path / "fifo.py")
    write_good(tmp_path)
    result = run_jaxfix_process(tmp_path, *COMMANDS[command], "fifo.py", GOOD_NAME, timeout=600)
    assert assert_one_error(result.stderr, "fifo.py") == "error: fifo.py: not a regular file"
    assert result.returncode == 2
    assert_good_processed(tmp_path, command, result.stdout)
    assert stat.S_ISFIFO(os.lstat(tmp_path / "fifo.py").st_mode)


@pytest.mark.parametrize("command", COMMANDS)
def test_file_whose_read_fails_is_one_error(tmp_path: Path, command: str) -> None:
    """We run as root, so chmod 000 reads fine: /proc/self/mem is a regular file whose read at
    offset 0 fails with EIO for every user."""
    if not os.path.exists("/proc/self/mem"):
        pytest.skip("no /proc/self/mem on this system: no file whose read fails for root")
    os.symlink("/proc/self/mem", tmp_path / "unreadable.py")
    write_good(tmp_path)
    result = run_jaxfix(tmp_path, *COMMANDS[command], "unreadable.py", GOOD_NAME)
    error = assert_one_error(result.stderr, "unreadable.py")
    assert error == "error: unreadable.py: input/output error"
    assert result.returncode == 2
    assert_good_processed(tmp_path, command, result.stdout)
    assert os.readlink(tmp_path / "unreadable.py") == "/proc/self/mem"


def test_read_only_file_is_rewritten_keeping_its_mode(tmp_path: Path) -> None:
    """As root the write succeeds; the rewritten file must still be 0o444. A read-only bad file
    next to it stays untouched."""
    good = write_good(tmp_path)
    bad = tmp_path / "syntax.py"
    bad.write_bytes(BAD_FILES[0].data)
    for path in (good, bad):
        os.chmod(path, 0o444)
    result = run_jaxfix(tmp_path, "apply", "--unsafe-fixes", "syntax.py", GOOD_NAME)
    assert assert_one_error(result.stderr, "syntax.py").startswith("error: syntax.py:3:")
    assert result.returncode == 2
    assert GOOD_FIXED in good.read_text(encoding="utf-8")
    assert stat.S_IMODE(os.stat(good).st_mode) == 0o444
    assert (bad.read_bytes(), stat.S_IMODE(os.stat(bad).st_mode)) == (BAD_FILES[0].data, 0o444)
    assert sorted(p.name for p in tmp_path.iterdir()) == [GOOD_NAME, "syntax.py"]  # no temp


@pytest.mark.parametrize("command", COMMANDS)
def test_missing_path_is_one_error(tmp_path: Path, command: str) -> None:
    write_good(tmp_path)
    result = run_jaxfix(tmp_path, *COMMANDS[command], "missing.py", GOOD_NAME)
    error = assert_one_error(result.stderr, "missing.py")
    assert error == "error: missing.py: no such file or directory"
    assert result.returncode == 2
    assert_good_processed(tmp_path, command, result.stdout)
    assert not (tmp_path / "missing.py").exists()


@pytest.mark.parametrize("command", COMMANDS)
def test_broken_symlink_is_one_error(tmp_path: Path, command: str) -> None:
    """A symlink whose target was deleted before the run."""
    (tmp_path / "target.py").write_text(GOOD, encoding="utf-8")
    os.symlink("target.py", tmp_path / "link.py")
    (tmp_path / "target.py").unlink()
    write_good(tmp_path)
    result = run_jaxfix(tmp_path, *COMMANDS[command], "link.py", GOOD_NAME)
    assert assert_one_error(result.stderr, "link.py") == "error: link.py: broken symlink"
    assert result.returncode == 2
    assert_good_processed(tmp_path, command, result.stdout)
    assert not (tmp_path / "target.py").exists()


# --- files deleted during the run (in-process: the moment must be deterministic)


@pytest.mark.parametrize("command", COMMANDS)
def test_file_deleted_between_discovery_and_reading(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str
) -> None:
    (tmp_path / "gone.py").write_text(GOOD, encoding="utf-8")
    write_good(tmp_path)

    def load_after_delete(path: Path) -> SourceFile | Outcome:
        if path.name == "gone.py":
            path.unlink()
        return load(path)

    monkeypatch.setattr(runner, "load", load_after_delete)
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(jaxfix_cli.main, [*COMMANDS[command], "."])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exc_info
    error = assert_one_error(result.stderr, "gone.py")
    assert error == "error: gone.py: no such file or directory"
    assert result.exit_code == 2
    assert_good_processed(tmp_path, command, result.stdout)
    assert not (tmp_path / "gone.py").exists()


def test_file_deleted_between_reading_and_writing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "gone.py").write_text(GOOD, encoding="utf-8")
    write_good(tmp_path)

    def run_then_delete(source: SourceFile, *args: Any, **kwargs: Any) -> Outcome:
        outcome = run(source, *args, **kwargs)
        if source.path.name == "gone.py":
            source.path.unlink()
        return outcome

    monkeypatch.setattr(runner, "run", run_then_delete)
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(jaxfix_cli.main, ["apply", "--unsafe-fixes", "."])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exc_info
    error = assert_one_error(result.stderr, "gone.py")
    assert error == "error: gone.py: cannot write: no such file or directory"
    assert result.exit_code == 2
    assert_good_processed(tmp_path, "apply-unsafe", result.stdout)
    assert sorted(p.name for p in tmp_path.iterdir()) == [GOOD_NAME]  # not recreated, no temp


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_code_libcst_rejects_is_one_error_and_the_rest_still_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str
) -> None:
    """Code CPython accepts and LibCST does not (a newer syntax than LibCST's parser knows):
    LibCST's error names the file and where, and the other files go on."""
    import libcst as cst

    write_good(tmp_path)
    parse = cst.parse_module

    def rejecting(text: str, *args: Any, **kwargs: Any) -> cst.Module:
        if "newer" in text:
            return parse("def f(:\n")
        return parse(text, *args, **kwargs)

    monkeypatch.setattr(cst, "parse_module", rejecting)
    (tmp_path / "newer.py").write_text(f"# newer\n{GOOD}", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(jaxfix_cli.main, [*COMMANDS[command], "."])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exc_info
    error = assert_one_error(result.stderr, "newer.py")
    assert re.match(r"error: newer\.py:\d+:\d+: cannot parse: parser error", error), error
    assert result.exit_code == 2
    assert_good_processed(tmp_path, command, result.stdout)


# --- a file under which the analysing process dies


def _dies_on_killer(real: Callable[..., Outcome]) -> Callable[..., Outcome]:
    """`runner.process` that kills its own process on `killer.py`, as the kernel kills a
    worker out of memory on a huge module."""

    def process(path: Path, job: Any) -> Outcome:
        if path.name == "killer.py":
            os.kill(os.getpid(), signal.SIGKILL)
        return real(path, job)

    return process


def _forking(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make the run's worker processes forks of this one, whatever the platform's default start
    method (`forkserver` from Python 3.14): they then get the patched analysis."""
    fork = multiprocessing.get_context("fork")
    real = multiprocessing.get_context
    monkeypatch.setattr(
        multiprocessing, "get_context", lambda method=None: fork if method is None else real(method)
    )


@pytest.mark.skipif(
    "fork" not in multiprocessing.get_all_start_methods(),
    reason="the workers get the patched analysis by being forked, and this platform cannot fork",
)
@pytest.mark.parametrize("command", COMMANDS)
def test_a_file_whose_worker_dies_is_one_error_and_the_run_goes_on(
    tmp_path: Path, command: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    _forking(monkeypatch)
    monkeypatch.setattr(runner, "process", _dies_on_killer(runner.process))
    (tmp_path / "killer.py").write_text(GOOD, encoding="utf-8")
    write_good(tmp_path)
    before = snapshot(tmp_path)
    result = run_jaxfix(tmp_path, *COMMANDS[command], "--jobs", "2", "killer.py", GOOD_NAME)
    assert result.returncode == 2
    assert assert_one_error(result.stderr, "killer.py") == (
        "error: killer.py: not analysed: the process analysing it was killed "
        "(SIGKILL; out of memory?)"
    )
    assert_good_processed(tmp_path, command, result.stdout)
    assert without(snapshot(tmp_path), [GOOD_NAME]) == without(before, [GOOD_NAME])
