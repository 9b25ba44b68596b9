"""The real `jaxfix` command on a pseudo-terminal: `apply --interactive` answered key by key (one
key, no Enter), the
progress bar and color on a terminal, plain text with NO_COLOR or without a terminal."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pexpect
import pytest

from jaxfix.run.batch import run_paths
from jaxfix.run.job import Job
from jaxfix.run.outcome import Outcome
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
    """`jaxfix ARGS` on a terminal, without pexpect's pauses around sending and closing (made
    for slow devices, they only add to the suite's time)."""
    child = pexpect.spawn(
        sys.executable,
        ["-m", "jaxfix", *args],
        cwd=str(cwd),
        env={**os.environ, "COLUMNS": "200", **env},
        encoding="utf-8",
        timeout=60,
        dimensions=(50, 200),
    )
    child.delaybeforesend = None
    child.delayafterclose = 0
    child.delayafterterminate = 0
    return child


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
        child.send(answer)  # one key, no Enter
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


def test_what_remains_is_listed_after_the_last_answer(two_files: Path) -> None:
    """Once the review ends, the findings left (declined, or in files not reviewed since
    `q`) are listed as `apply` lists them, at their lines in the files as written."""
    output, status = review(two_files, ["n", "y", "q"], "a.py", "b.py")
    remaining = output[output.rindex("\nq") :]
    # The declined finding, one line up since the accepted fix removed `import functools`.
    assert "a.py:11:18: JF101" in remaining
    assert "b.py:6:1: JF102" in remaining  # asked about, then quit
    assert "a.py:16:1: JF102" not in remaining  # accepted
    assert "Checked 2 files: fixed 1 finding in 1 file, 2 remaining." in remaining
    assert status == 1


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
    child.send("\r")  # Enter alone is no answer: the question stays
    child.send("m")
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


# A package whose jitted step calls a helper that pickles in another module: the run analyses
# train.py again, then io.py (rounds of tracing across modules); the fillers bring it to 25.
TRACED_ACROSS = {
    "pkg/__init__.py": "",
    "pkg/io.py": "import pickle\n\n\ndef save(log, x):\n    log.append(pickle.dumps(x))\n",
    "pkg/train.py": (
        "import jax\n\nfrom pkg.io import save\n\nLOG = []\n\n\n"
        "@jax.jit\ndef step(x):\n    save(LOG, x)\n    return x\n"
    ),
    **{f"pkg/m{index:02}.py": CACHED for index in range(22)},
}


def bar_counts(output: str, description: str = "Checking") -> list[tuple[int, int]]:
    """Each `done/total` the progress bar drew, in order."""
    return [
        (int(done), int(total))
        for done, total in re.findall(description + r"[^\r\n]*?(\d+)/(\d+)", output)
    ]


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_the_progress_bar_moves_as_each_file_completes(many_files: Path, jobs: str) -> None:
    output, status = finish(spawn(many_files, "check", "--no-cache", "-j", jobs, "."))
    assert status == 1
    counts = bar_counts(output)
    assert {total for _, total in counts} == {25}
    # Every count from 0 to 25 was drawn (one file at a time: 25 files make chunks of one),
    # never going back, and all of it before the first finding was printed.
    assert sorted({done for done, _ in counts}) == list(range(26))
    assert [done for done, _ in counts] == sorted(done for done, _ in counts)
    assert output.index("25/25") < output.index("JF102")


def test_the_progress_bar_counts_the_rounds_across_modules(tmp_path: Path) -> None:
    for name, text in TRACED_ACROSS.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    output, status = finish(spawn(tmp_path, "check", "--no-cache", "-j", "1", "pkg"))
    assert status == 1 and "pkg/io.py:5:16: JF101" in re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", output)
    counts = bar_counts(output)
    files = len(TRACED_ACROSS)
    # io.py analysed again, with the entry train.py's traced call gives it (the first round
    # noted that call), then train.py twice: told that `save`'s fix puts its statement in a
    # host callback (host code that reads what it writes must wait), then that every
    # importer can (`project.WAITS`)
    assert counts[-1] == (files + 3, files + 3)
    assert (files, files) in counts  # the first round done, before the second was known
    assert sorted({done for done, _ in counts}) == list(range(files + 4))


class Recorder:
    """A progress sink that notes what it hears, and when (before or after an outcome)."""

    def __init__(self) -> None:
        self.total = 0
        self.done_count = 0
        self.events: list[str] = []

    def more(self, count: int) -> None:
        self.total += count
        self.events.append(f"more {count}")

    def done(self, count: int = 1) -> None:
        self.done_count += count
        self.events.append(f"done {count}")


@pytest.mark.parametrize("jobs", [1, 2])
@pytest.mark.parametrize("cache_state", ["none", "edited", "warm"])
def test_run_paths_reports_every_file_of_every_round_before_the_outcomes(
    tmp_path: Path, jobs: int, cache_state: str
) -> None:
    """Analysed, or from the cache after an edit, every round counts; a run the cache replays
    whole has no rounds, nor has one whose edited file tells the run nothing new."""
    from jaxfix.run.cache import Cache

    for name, text in TRACED_ACROSS.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    paths = sorted((tmp_path / "pkg").glob("*.py"))
    cache = Cache(tmp_path / "cache") if cache_state != "none" else None
    if cache is not None:
        list(run_paths([(path, Job()) for path in paths], jobs=jobs, cache=cache))
        cache.save()
        cache = Cache(tmp_path / "cache")
    if cache_state == "edited":
        with paths[0].open("a", encoding="utf-8") as handle:
            handle.write("# edited\n")
    recorder = Recorder()
    seen: list[tuple[int, int]] = []
    results: Iterator[Outcome] = run_paths(
        [(path, Job()) for path in paths], jobs=jobs, cache=cache, progress=recorder
    )
    for outcome in results:
        seen.append((recorder.done_count, recorder.total))
        assert outcome.error is None
    files = len(paths)
    if cache_state == "warm":
        assert seen == [(files, files)] * files
        assert recorder.events == [f"more {files}", f"done {files}"]
        return
    if cache_state == "edited":  # a comment: the edited file's rounds, the rest replayed
        assert seen == [(files, files)] * files
        assert recorder.events == ["more 1", "done 1", f"more {files - 1}", f"done {files - 1}"]
        return
    assert seen == [(files + 3, files + 3)] * files
    assert recorder.events[0] == f"more {files}"
    # io.py, entered from train.py's traced call; train.py, told of `save`'s callback, twice
    assert recorder.events.count("more 1") == 3
