"""The speed levers never change a result: worker processes, the result cache (cold, warm,
after an edit) and the cache's invalidation, all through the real command line.

(The candidate pass and the slice are checked against whole-file analysis in `test_firstpass`
and in fuzzing.)
"""

from __future__ import annotations

import ast
import gc
import os
import re
import shutil
import subprocess
import sys
import threading
import time
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from jaxfix.analysis import candidates_read, declarations, firstpass
from jaxfix.analysis import file as file_analysis
from jaxfix.cli import main
from jaxfix.models.parts import Part
from jaxfix.proofs.cases import Case, load_cases
from jaxfix.rules import registry
from jaxfix.run import batch, collector, engine, runner, stamps
from jaxfix.run.cache import Cache
from jaxfix.run.workers import Workers
from tests.programs import CLEAN

ROOT = Path(__file__).resolve().parent.parent

FINDING = """\
import pickle

import jax

BLOBS = []


@jax.jit
def step(x):
    BLOBS.append(pickle.dumps(x))
    return x
"""


def make_tree(root: Path, per_rule: int) -> Path:
    """The example project plus the `before.py` of the first `per_rule` fixtures of every rule:
    files of every rule, with findings and fixes, and calls across modules."""
    shutil.copytree(ROOT / "examples" / "project", root)
    taken: dict[str, int] = {}
    for case in load_cases():
        rule = case.directory.parent.name
        taken[rule] = taken.get(rule, 0) + 1
        if taken[rule] <= per_rule:
            target = root / "fixtures" / rule / f"{case.directory.name}.py"
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(case.directory / "before.py", target)
    return root


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """Each run analyses it from scratch."""
    return make_tree(tmp_path / "tree", per_rule=3)


@pytest.fixture
def small_tree(tmp_path: Path) -> Path:
    """Fixing is the slow part."""
    return make_tree(tmp_path / "tree", per_rule=1)


def jaxfix(root: Path, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, [*args, str(root)])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exc_info
    return result.exit_code, result.stdout, result.stderr


def files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*.py"))}


def test_workers_and_the_cache_give_the_same_findings(tree: Path, tmp_path: Path) -> None:
    baseline = jaxfix(tree, "check", "--no-cache", "--jobs", "1")
    assert baseline[0] == 1 and baseline[1], "the tree must have findings to compare"
    cache = ["--cache-dir", str(tmp_path / "cache")]
    assert jaxfix(tree, "check", "--no-cache", "--jobs", "2") == baseline
    assert jaxfix(tree, "check", *cache, "--jobs", "2") == baseline  # cold
    assert (tmp_path / "cache" / "CACHEDIR.TAG").is_file()
    assert jaxfix(tree, "check", *cache, "--jobs", "2") == baseline  # warm
    assert jaxfix(tree, "check", *cache, "--jobs", "1") == baseline  # warm, no workers


def test_workers_and_the_cache_give_the_same_diff(small_tree: Path, tmp_path: Path) -> None:
    tree = small_tree
    command = ["apply", "--diff", "--unsafe-fixes"]
    baseline = jaxfix(tree, *command, "--no-cache", "--jobs", "1")
    assert baseline[0] == 1 and baseline[1].count("+++ b/") > 3
    cache = ["--cache-dir", str(tmp_path / "cache")]
    assert jaxfix(tree, *command, *cache, "--jobs", "2") == baseline  # cold
    assert jaxfix(tree, *command, *cache, "--jobs", "2") == baseline  # warm


def test_apply_with_workers_and_cache_writes_what_a_plain_apply_writes(
    small_tree: Path, tmp_path: Path
) -> None:
    tree = small_tree
    plain = tmp_path / "plain"
    shutil.copytree(tree, plain)
    cache = ["--cache-dir", str(tmp_path / "cache")]
    jaxfix(tree, "check", *cache)  # fill the cache before fixing
    applied = jaxfix(tree, "apply", "--unsafe-fixes", *cache, "--jobs", "2")
    expected = jaxfix(plain, "apply", "--unsafe-fixes", "--no-cache", "--jobs", "1")
    assert applied[0] == expected[0]
    assert files(tree) == files(plain)
    after = jaxfix(tree, "check", *cache)
    assert after == jaxfix(tree, "check", "--no-cache")


def test_worker_processes_start_only_for_a_run_that_repays_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """By default (no `--jobs`) a few small files are analysed in the command's own process;
    many files, or large ones, get one worker per core, and never more workers than files."""
    monkeypatch.setattr(batch, "default_jobs", lambda: 4)
    small = []
    for n in range(40):
        small.append(tmp_path / f"small{n}.py")
        small[-1].write_text(FINDING)
    large = []
    for n in range(3):
        large.append(tmp_path / f"large{n}.py")
        large[-1].write_text(FINDING * 200)  # 26 KB each
    large.append(tmp_path / "largest.py")
    large[-1].write_text(FINDING * 20000)  # 2 MB

    def workers(paths: list[Path]) -> int:
        return batch._workers_for([batch._size(path) for path in paths])

    assert workers(small[:3]) == 1
    assert workers(small) == 3  # 40 files: 0.6 s of analysis
    assert workers(small[:3] + large[-1:]) == 4
    assert workers(large[-1:]) == 1
    assert workers(large[:3]) == 1
    assert workers([tmp_path / "missing.py"]) == 1


def test_a_small_run_starts_no_worker_process_unless_jobs_are_asked_for(
    small_tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from concurrent import futures

    started: list[int] = []
    pool = futures.ProcessPoolExecutor

    def counted(max_workers: int) -> futures.ProcessPoolExecutor:
        started.append(max_workers)
        return pool(max_workers=max_workers)

    monkeypatch.setattr(futures, "ProcessPoolExecutor", counted)
    monkeypatch.setattr(batch, "default_jobs", lambda: 2)
    package = small_tree / "trainer"
    baseline = jaxfix(package, "check", "--no-cache")
    assert started == [] and baseline[0] == 1
    assert jaxfix(package, "check", "--no-cache", "--jobs", "2") == baseline
    assert started == [2]  # one pool, kept for the rounds across modules


def test_a_later_batch_uses_the_workers_an_earlier_one_started(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A round across modules of a few files goes to the run's workers, once started (they
    cost nothing more), with each outcome in its file's place whatever the order of work."""
    from concurrent import futures

    monkeypatch.setattr(batch, "default_jobs", lambda: 2)
    small, large = tmp_path / "small.py", tmp_path / "large.py"
    small.write_text(CLEAN)
    large.write_text(FINDING * 100)
    pending = [(small, batch.Job()), (large, batch.Job())]
    assert batch._workers_for([batch._size(small), batch._size(large)]) == 1
    with Workers() as workers:
        workers.pool(2)  # as an earlier, larger batch of the run did
        asked: list[int] = []
        start = workers.pool

        def pool(count: int) -> futures.ProcessPoolExecutor:
            asked.append(count)
            return start(count)

        monkeypatch.setattr(workers, "pool", pool)
        outcomes = batch._analyse(pending, None, None, workers)
    assert asked == [2]
    assert [outcome.display for outcome in outcomes] == [str(small), str(large)]
    assert outcomes[0].diagnostics == [] and outcomes[1].diagnostics


def test_the_largest_chunks_go_to_the_workers_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No worker is left with a large file while the others have nothing to do: the chunks
    go out largest first, and each outcome still comes back in its file's place."""
    pending = []
    for name, copies in [("a.py", 1), ("b.py", 30), ("c.py", 10)]:
        path = tmp_path / name
        path.write_text(FINDING * copies)
        pending.append((path, batch.Job()))
    sent: list[Path] = []

    def map_chunks(work: Callable[[Any], Any], chunks: list[Any], *_: Any) -> list[Any]:
        sent.extend(path for chunk in chunks for path, _ in chunk)
        return [work(chunk) for chunk in chunks]

    with Workers() as workers:
        monkeypatch.setattr(workers, "map_chunks", map_chunks)
        outcomes = batch._analyse(pending, 2, None, workers)
    assert [path.name for path in sent] == ["b.py", "c.py", "a.py"]
    assert [outcome.display for outcome in outcomes] == [str(path) for path, _ in pending]


def test_an_edited_file_is_analysed_again(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("import jax\n", encoding="utf-8")
    cache = ["--cache-dir", str(tmp_path / "cache")]
    assert jaxfix(tmp_path, "check", *cache)[0] == 0
    (tmp_path / "a.py").write_text(FINDING, encoding="utf-8")
    code, stdout, _ = jaxfix(tmp_path, "check", *cache)
    assert code == 1 and "JF101" in stdout


def test_the_cache_is_keyed_by_the_selected_rules(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text(FINDING, encoding="utf-8")
    cache = ["--cache-dir", str(tmp_path / "cache")]
    assert jaxfix(tmp_path, "check", *cache, "--ignore", "JF101")[0] == 0
    assert jaxfix(tmp_path, "check", *cache)[0] == 1
    assert jaxfix(tmp_path, "check", *cache, "--ignore", "JF101")[0] == 0


def test_an_unknown_selector_is_an_error_with_a_warm_cache(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text(FINDING, encoding="utf-8")
    cache = ["--cache-dir", str(tmp_path / "cache")]
    jaxfix(tmp_path, "check", *cache)
    code, _, stderr = jaxfix(tmp_path, "check", *cache, "--select", "JF999")
    assert code == 2 and "Invalid value for --select: unknown rule `JF999`" in stderr


def test_a_corrupt_cache_is_ignored(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text(FINDING, encoding="utf-8")
    folder = tmp_path / "cache"
    expected = jaxfix(tmp_path, "check", "--cache-dir", str(folder))
    written = sorted(folder.rglob("*.json"))
    assert {p.parent.suffix for p in written} == {"", ".files"}  # the runs and a shard of files
    for entry in written:
        entry.write_text('{"half": ', encoding="utf-8")
    assert jaxfix(tmp_path, "check", "--cache-dir", str(folder)) == expected


def test_an_unwritable_cache_folder_does_not_fail_the_run(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text(FINDING, encoding="utf-8")
    blocker = tmp_path / "file"
    blocker.write_text("", encoding="utf-8")
    code, stdout, _ = jaxfix(tmp_path / "a.py", "check", "--cache-dir", str(blocker / "cache"))
    assert code == 1 and "JF101" in stdout


def test_clean_removes_the_cache_and_refuses_other_folders(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text(FINDING, encoding="utf-8")
    folder = tmp_path / "cache"
    jaxfix(tmp_path / "a.py", "check", "--cache-dir", str(folder))
    result = CliRunner().invoke(main, ["clean", "--cache-dir", str(folder)])
    assert result.exit_code == 0 and not folder.exists()
    (tmp_path / "precious").mkdir()
    result = CliRunner().invoke(main, ["clean", "--cache-dir", str(tmp_path / "precious")])
    assert result.exit_code == 1 and "not a jaxfix cache folder" in result.stderr
    assert (tmp_path / "precious").is_dir()


def test_the_cache_lives_at_the_project_root_whatever_the_working_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Run from a subfolder, the cache goes beside the `pyproject.toml` that configures the run
    (as Ruff's does), not into the subfolder; `clean` finds it there."""
    monkeypatch.delenv("JAXFIX_CACHE_DIR")
    (tmp_path / "pyproject.toml").write_text("[tool.jaxfix]\n", encoding="utf-8")
    sub = tmp_path / "pkg" / "sub"
    sub.mkdir(parents=True)
    (sub / "a.py").write_text(FINDING, encoding="utf-8")
    monkeypatch.chdir(sub)
    result = CliRunner().invoke(main, ["check", "a.py"])
    assert result.exit_code == 1 and "JF101" in result.stdout
    assert not (sub / ".jaxfix_cache").exists()
    assert (tmp_path / ".jaxfix_cache").is_dir()
    result = CliRunner().invoke(main, ["clean"])
    assert result.exit_code == 0 and not (tmp_path / ".jaxfix_cache").exists()


def test_a_warm_run_imports_neither_libcst_nor_the_analysis(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text(FINDING, encoding="utf-8")
    heavy = ("libcst", "jaxfix.analysis.interpreter", "jaxfix.run.engine")
    script = (
        "import atexit, sys\n"
        "from jaxfix.cli import main\n"
        f"atexit.register(lambda: print([m in sys.modules for m in {heavy!r}], file=sys.stderr))\n"
        f"main(['check', '--cache-dir', {str(tmp_path / 'cache')!r}, {str(tmp_path)!r}])\n"
    )
    runs = [
        subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
        for _ in range(2)
    ]
    assert [run.returncode for run in runs] == [1, 1]
    assert runs[0].stdout == runs[1].stdout
    imported = [run.stderr.splitlines()[-1] for run in runs]
    assert imported == [str([True] * len(heavy)), str([False] * len(heavy))]


@pytest.mark.parametrize(("text", "imported"), [(CLEAN, False), (FINDING, True)])
def test_libcst_is_imported_only_for_a_file_whose_rules_run(
    tmp_path: Path, text: str, imported: bool
) -> None:
    """A file whose first pass leaves no rule anything to look at is analysed (CPython's tree)
    without LibCST, which takes longer to import than such a file takes to check."""
    (tmp_path / "a.py").write_text(text, encoding="utf-8")
    modules = ("jaxfix.analysis.interpreter", "libcst")
    script = (
        "import atexit, sys\n"
        "from jaxfix.cli import main\n"
        f"loaded = lambda: [m in sys.modules for m in {modules!r}]\n"
        "atexit.register(lambda: print(loaded(), file=sys.stderr))\n"
        f"main(['check', '--no-cache', {str(tmp_path)!r}])\n"
    )
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert run.returncode == int(imported), run.stdout + run.stderr
    assert run.stderr.splitlines()[-1] == str([True, imported])


def counted(monkeypatch: pytest.MonkeyPatch, module: object, name: str) -> list[object]:
    """The first argument of each call of `module.name` from now on."""
    calls: list[object] = []
    original = getattr(module, name)

    def counting(first: object, *args: object, **kwargs: object) -> object:
        calls.append(first)
        return original(first, *args, **kwargs)

    monkeypatch.setattr(module, name, counting)
    return calls


def test_after_an_edit_only_the_edited_file_is_analysed(
    tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = ["--cache-dir", str(tmp_path / "cache")]
    before = jaxfix(tree, "check", *cache)
    edited = tree / "trainer" / "model.py"
    edited.write_text(edited.read_text(encoding="utf-8") + "\n# edited\n", encoding="utf-8")
    analysed = counted(monkeypatch, runner, "process")
    assert jaxfix(tree, "check", *cache, "--jobs", "1") == before
    # Twice: alone, then with the functions train.py's traced code calls (see
    # jaxfix.analysis.project).
    assert analysed == [edited, edited]


def test_a_file_analysed_again_with_more_entries_reuses_what_its_text_alone_decides(
    tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each round of tracing across modules analyses the file with more of its callers'
    entries; the walks that depend on its text alone (the analysis' declarations, the
    candidates) are done once, the interpretation each time (a summary a call cycle leaves
    unknown depends on the order the tracing asks for the summaries)."""
    cache = ["--cache-dir", str(tmp_path / "cache")]
    before = jaxfix(tree, "check", *cache)
    edited = tree / "trainer" / "model.py"
    edited.write_text(edited.read_text(encoding="utf-8") + "\n# edited\n", encoding="utf-8")
    analysed = counted(monkeypatch, runner, "process")
    interpreted = counted(monkeypatch, file_analysis, "analyse")
    declared = counted(monkeypatch, declarations._Declarations, "walk")
    reads = counted(monkeypatch, candidates_read, "_read")
    assert jaxfix(tree, "check", *cache, "--jobs", "1") == before
    assert analysed == [edited, edited]
    assert (len(interpreted), len(declared), len(reads)) == (2, 1, 1)


def test_the_cycle_collector_is_paused_only_while_a_file_is_analysed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "a.py").write_text(FINDING, encoding="utf-8")
    seen: list[bool] = []

    def observing(*args: object, **kwargs: object) -> object:
        seen.append(gc.isenabled())
        return engine.run_text(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(runner, "run_text", observing)
    assert gc.isenabled()
    code, stdout, _ = jaxfix(tmp_path, "check", "--no-cache", "--jobs", "1")
    assert code == 1 and "JF101" in stdout  # the same finding with the collector paused
    assert seen == [False] and gc.isenabled()


def test_the_collector_stays_paused_until_every_thread_is_done() -> None:
    """The language server analyses a document while it checks the workspace: the first
    thread to finish must not restart the collector under the other."""
    inside, finish = threading.Event(), threading.Event()

    def analyse() -> None:
        with collector.paused():
            inside.set()
            finish.wait()

    other = threading.Thread(target=analyse)
    with collector.paused():
        other.start()
        inside.wait()
    still_paused = not gc.isenabled()  # the other thread is still inside
    finish.set()
    other.join()
    assert still_paused and gc.isenabled()


def test_the_collector_puts_what_an_analysis_keeps_in_the_oldest_generation() -> None:
    """What a file's analysis keeps (the last tree) is not scanned again by the collector's
    young collections."""
    kept: list[object] = []
    with collector.paused():
        kept.extend([] for _ in range(5000))
    assert gc.get_count()[0] < 100
    oldest = {id(o) for o in gc.get_objects(generation=2)}
    assert all(id(o) in oldest for o in kept)


class _Cyclic:
    def __init__(self) -> None:
        self.itself = self


def test_cyclic_garbage_of_the_pauses_waits_for_enough_of_it() -> None:
    """Garbage in reference cycles that analyses leave (LibCST's scopes make some) is freed by
    a full collection once the pauses have added `FULL_AFTER` objects (or a quarter of what
    lived after the last full collection), not after each analysis: as the next pause begins."""

    def pause_adding(count: int) -> None:
        with collector.paused():
            for _ in range(count):
                _Cyclic()

    pause_adding(0)  # one that earlier pauses found due runs as a pause begins
    full_collections = gc.get_stats()[2]["collections"]
    while gc.get_stats()[2]["collections"] == full_collections:  # from a full collection on
        pause_adding(50_000)
        pause_adding(0)  # (so that it runs in a pause that adds nothing)
    with collector.paused():
        first = weakref.ref(_Cyclic())
    pauses = 0
    while first() is not None and pauses < 1_000:
        pause_adding(10_000)
        pauses += 1
    assert first() is None
    assert pauses >= collector.FULL_AFTER // 10_000


_BACKOFF_PROGRAM = """
import gc
from jaxfix.run import collector

collector.FULL_AFTER = 20_000


class Cyclic:
    def __init__(self):
        self.itself = self


kept = []


def pauses_to_the_next_full_collection(make):
    start = gc.get_stats()[2]["collections"]
    pauses = 0
    while gc.get_stats()[2]["collections"] == start:
        with collector.paused():
            make()
        pauses += 1
    return pauses


def keep():
    kept.extend([] for _ in range(1000))


def garbage():
    for _ in range(1000):
        Cyclic()


pauses_to_the_next_full_collection(garbage)  # from a full collection that freed much on
print(*(pauses_to_the_next_full_collection(make) for make in [keep, keep, keep, garbage, keep]))
"""


def test_a_full_collection_that_frees_little_makes_the_next_wait_longer() -> None:
    """In a fresh process (a small heap, so that `FULL_AFTER` decides): after a collection
    that freed nothing the pauses wait twice as long for the next, after one that freed much
    no longer than CPython's own rule says (a quarter of what lived after it)."""
    printed = _printed_in_a_fresh_process(_BACKOFF_PROGRAM)
    first, second, third, garbage, after_garbage = map(int, printed)
    assert first <= 25
    assert second >= 2 * first - 1 and third >= 2 * second - 1
    assert garbage >= 2 * third - 1
    assert after_garbage * 4 < garbage


_DEFERRED_PROGRAM = """
import gc
from jaxfix.run import collector


class Cyclic:
    def __init__(self):
        self.itself = self


def full():
    return gc.get_stats()[2]["collections"]


start = full()
with collector.paused():
    garbage = [Cyclic() for _ in range(collector.FULL_AFTER)]
del garbage
ended = full()
with collector.paused():
    began = full()
print(ended - start, began - ended)
"""


def test_a_full_collection_found_due_runs_when_the_next_pause_begins() -> None:
    """Not when the pause that made it due ends: a command's last file (it then leaves with
    `os._exit`) is not followed by one. In a fresh process, where `FULL_AFTER` decides."""
    assert _printed_in_a_fresh_process(_DEFERRED_PROGRAM) == ["0", "1"]


def _printed_in_a_fresh_process(program: str) -> list[str]:
    """The words `program` prints, run by a new interpreter (its heap small, so that
    `collector.FULL_AFTER` decides when a full collection is due)."""
    result = subprocess.run(
        [sys.executable, "-c", program], cwd=ROOT, capture_output=True, text=True, check=True
    )
    return result.stdout.split()


def _first_case_of_each_rule() -> list[Case]:
    cases: dict[str, Case] = {}
    for case in load_cases():
        cases.setdefault(case.rule, case)
    return list(cases.values())


@pytest.mark.parametrize("case", _first_case_of_each_rule(), ids=lambda case: case.rule)
def test_checking_and_fixing_a_file_make_no_reference_cycle_of_jaxfix(case: Case) -> None:
    """A file's analysis, its rules and their fixes are freed by reference counting, not left
    to the collector (see `jaxfix.run.collector`). LibCST's scope analysis and `ast.literal_eval`
    make cycles of their own, which hold nothing of jaxfix's nor a syntax tree of CPython's."""
    text = (case.directory / "before.py").read_text(encoding="utf-8")
    rules = registry.all_rules()
    gc.disable()
    gc.freeze()  # what lives now, garbage or not, is out of the test's collection (and its cost)
    try:
        engine.check_text(text, rules, edits=True)
        engine.fix_text(text, rules, unsafe_fixes=True)
        # What the engine keeps of the last file it analysed (its tree, its analysis) goes.
        engine.check_text("import jax\n\n@jax.jit\ndef f(x):\n    return x\n", rules)
        gc.set_debug(gc.DEBUG_SAVEALL)
        gc.collect()
        garbage, gc.garbage[:] = list(gc.garbage), []
    finally:
        gc.set_debug(0)
        gc.unfreeze()
        gc.enable()
    held = [o for o in garbage if _of_jaxfix(o)]
    assert held == [], held[:5]


def _of_jaxfix(value: object) -> bool:
    """A jaxfix object or function, or a node of CPython's syntax tree."""
    if callable(value) and not isinstance(value, type):
        module = getattr(value, "__module__", None) or ""
    else:
        module = type(value).__module__
    return module.startswith("jaxfix") or isinstance(value, ast.AST)


HELPER = """\
import pickle


def save_blob(log, value):
    log.append(pickle.dumps(value))


def save_tag(log, value):
    log.append(value)
"""

CALLER = """\
import jax

from pkg.io import {name}

LOG = []


@jax.jit
def step(x):
    {name}(LOG, x)
    return x
"""


OLD_NS = time.time_ns() - 3600 * 10**9  # an hour ago


def project(root: Path) -> Path:
    """A package whose finding is in the helper module, made by the caller's traced call."""
    return package(root, {"io.py": HELPER, "train.py": CALLER.format(name="save_blob")})


def package(root: Path, modules: dict[str, str]) -> Path:
    """`root/pkg` with these modules and an empty `__init__.py`, its files older than the
    cache's racy window, so that their size and mtime are trusted."""
    write(root / "pkg" / "__init__.py", "")
    for name, text in modules.items():
        write(root / "pkg" / name, text)
    for path in root.rglob("*.py"):
        os.utime(path, ns=(OLD_NS, OLD_NS))
    return root


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def findings(stdout: str) -> list[tuple[str, str]]:
    """`path:line CODE` of each finding, as printed."""
    return re.findall(r"^(\S+?:\d+):\d+: (JF\d+)", stdout, re.M)


def helper_pickles_its_tag(root: Path) -> None:
    write(
        root / "pkg" / "io.py",
        HELPER.replace("log.append(value)", "log.append(pickle.dumps(value))"),
    )
    write(root / "pkg" / "train.py", CALLER.format(name="save_tag"))


EDITS: dict[str, tuple[Callable[[Path], object], list[tuple[str, str]]]] = {
    "body": (
        lambda root: write(
            root / "pkg" / "train.py", CALLER.format(name="save_blob").replace("x)\n", "x * 2)\n")
        ),
        [("pkg/io.py:5", "JF101")],
    ),
    "caller-stops-calling": (
        lambda root: write(root / "pkg" / "train.py", CALLER.format(name="save_tag")),
        [],
    ),
    "helper-stops-pickling": (
        lambda root: write(root / "pkg" / "io.py", HELPER.replace("pickle.dumps(value)", "value")),
        [],
    ),
    "helper-starts-pickling": (helper_pickles_its_tag, [("pkg/io.py:9", "JF101")]),
    "file-added": (
        lambda root: write(root / "pkg" / "tags.py", CALLER.format(name="save_tag")),
        [("pkg/io.py:5", "JF101")],
    ),
    "caller-deleted": (lambda root: (root / "pkg" / "train.py").unlink(), []),
    "caller-renamed": (
        lambda root: (root / "pkg" / "train.py").rename(root / "pkg" / "loop.py"),
        [("pkg/io.py:5", "JF101")],
    ),
    "helper-renamed": (
        lambda root: (root / "pkg" / "io.py").rename(root / "pkg" / "store.py"),
        [],
    ),
    "helper-touched": (lambda root: os.utime(root / "pkg" / "io.py"), [("pkg/io.py:5", "JF101")]),
    "helper-comment": (
        lambda root: write(root / "pkg" / "io.py", "# a comment\n" + HELPER),
        [("pkg/io.py:6", "JF101")],
    ),
    "helper-and-caller-reformatted": (
        lambda root: (
            write(root / "pkg" / "io.py", HELPER.replace("(log, value)", "(log,  value)")),
            write(root / "pkg" / "train.py", "\n" + CALLER.format(name="save_blob")),
        ),
        [("pkg/io.py:5", "JF101")],
    ),
}


@pytest.mark.parametrize(("edit", "expected"), EDITS.values(), ids=EDITS)
def test_after_an_edit_the_cache_gives_what_a_run_without_it_gives(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    edit: Callable[[Path], object],
    expected: list[tuple[str, str]],
) -> None:
    root = project(tmp_path / "tree")
    monkeypatch.chdir(root)
    cache = ["--cache-dir", str(tmp_path / "cache")]
    before = jaxfix(Path("."), "check", *cache)
    assert findings(before[1]) == [("pkg/io.py:5", "JF101")]
    edit(root)
    uncached = jaxfix(Path("."), "check", "--no-cache")
    assert findings(uncached[1]) == expected
    assert jaxfix(Path("."), "check", *cache) == uncached  # what changed, analysed again
    assert jaxfix(Path("."), "check", *cache) == uncached  # the whole run from the cache


def test_an_edit_that_tells_the_run_nothing_new_analyses_the_edited_file_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The helper is analysed in both of its rounds (alone, then with the caller's entry) and
    tells the run what it told it before: the caller's results are replayed, not looked up."""
    root = project(tmp_path / "tree")
    cache = ["--cache-dir", str(tmp_path / "cache")]
    before = jaxfix(root, "check", *cache)
    write(root / "pkg" / "io.py", HELPER + "# edited\n")
    analysed = counted(monkeypatch, runner, "process")
    looked_up: list[Path] = []
    lookup = Cache.lookup
    monkeypatch.setattr(Cache, "lookup", lambda c, p, j: looked_up.append(p) or lookup(c, p, j))
    assert jaxfix(root, "check", *cache, "--jobs", "1") == before
    helper = root / "pkg" / "io.py"
    assert analysed == [helper, helper]
    assert looked_up == [helper, helper]
    write(root / "pkg" / "io.py", HELPER.replace("pickle.dumps(value)", "value"))
    analysed.clear()
    assert findings(jaxfix(root, "check", *cache, "--jobs", "1")[1]) == []
    assert helper in analysed  # it anchors nothing now: the run is traced again
    assert root / "pkg" / "train.py" not in analysed  # its results are looked up


def test_an_edit_of_a_file_another_modules_jit_wrapper_decorates_replays_its_rounds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The decorated file is analysed again in both of its rounds, the second with the
    wrapper as a transform and the static argument it declares: the same finding (`x`, not
    the static `n`) as a run without the cache, and the wrapper's file is not analysed."""
    wrapper = "import jax\n\n\ndef compiled(fn):\n    return jax.jit(fn, static_argnums=1)\n"
    train = (
        "import pickle\n\nfrom pkg.compile import compiled\n\nLOG = []\n\n\n@compiled\n"
        "def step(x, n):\n    LOG.append(pickle.dumps(x))\n    LOG.append(pickle.dumps(n))\n"
        "    return x\n"
    )
    root = package(tmp_path / "tree", {"compile.py": wrapper, "train.py": train})
    cache = ["--cache-dir", str(tmp_path / "cache")]
    before = jaxfix(root, "check", *cache)
    assert findings(before[1]) == [(str(root / "pkg" / "train.py") + ":10", "JF101")]
    write(root / "pkg" / "train.py", train + "# edited\n")
    analysed = counted(monkeypatch, runner, "process")
    looked_up = counted(monkeypatch, Cache, "lookup")
    assert jaxfix(root, "check", *cache, "--jobs", "1") == before
    assert analysed == [root / "pkg" / "train.py"] * 2
    assert len(looked_up) == 2  # the edited file's two rounds: the rest is replayed
    assert jaxfix(root, "check", "--no-cache") == before


def test_an_edit_that_changes_what_a_later_round_tells_the_run_traces_the_run_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The helper alone tells the run the same before and after the edit; entered from the
    caller's traced call it now hands `keep` a tracer: the run is traced again from there."""
    keep = "import pickle\n\n\ndef keep(log, v):\n    log.append(pickle.dumps(v))\n"
    helper = "from pkg.util import keep\n\n\ndef save_blob(log, value):\n    keep(log, 1)\n"
    modules = {"util.py": keep, "io.py": helper, "train.py": CALLER.format(name="save_blob")}
    root = package(tmp_path / "tree", modules)
    cache = ["--cache-dir", str(tmp_path / "cache")]
    assert findings(jaxfix(root, "check", *cache)[1]) == []
    write(root / "pkg" / "io.py", helper.replace("keep(log, 1)", "keep(log, value)"))
    analysed = counted(monkeypatch, runner, "process")
    result = jaxfix(root, "check", *cache, "--jobs", "1")
    # Both rounds of the helper, then `keep` with the tracer it now gets (the helper's rounds
    # come from the cache the second time); the callback that `keep`'s fix writes runs where
    # the helper calls it, and where the caller calls the helper: each is told in turn
    # (`project.WAITS`), then both again with the verdict that every one can wait for it.
    io, util, train = (root / "pkg" / name for name in ("io.py", "util.py", "train.py"))
    assert analysed == [io, io, util, io, train, io, train]
    assert findings(result[1]) == [(f"{root / 'pkg' / 'util.py'}:5", "JF101")]
    assert result == jaxfix(root, "check", "--no-cache")


def test_a_warm_run_reads_no_file_and_a_touched_one_is_not_analysed_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = project(tmp_path / "tree")
    cache = ["--cache-dir", str(tmp_path / "cache")]
    before = jaxfix(root, "check", *cache)
    hashed = counted(monkeypatch, stamps, "digest")
    assert jaxfix(root, "check", *cache) == before
    assert hashed == []  # trusted by size and mtime
    os.utime(root / "pkg" / "io.py", ns=(OLD_NS + 10**9, OLD_NS + 10**9))
    write(root / "pkg" / "train.py", CALLER.format(name="save_blob") + "# edited\n")
    analysed = counted(monkeypatch, runner, "process")
    assert jaxfix(root, "check", *cache, "--jobs", "1") == before
    assert set(analysed) == {root / "pkg" / "train.py"}  # io.py: hashed, found unchanged
    assert len(hashed) == 2


def test_a_file_rewritten_within_its_mtime_granularity_is_read_again(tmp_path: Path) -> None:
    """A file written moments before a run may be written again without its size or mtime
    moving: they are not trusted until it is older (git's racily clean files)."""
    path = tmp_path / "a.py"
    write(path, FINDING.replace("pickle.dumps(x)", "pickle.dumps(1)"))
    cache = ["--cache-dir", str(tmp_path / "cache")]
    assert jaxfix(path, "check", *cache)[0] == 0
    stat = path.stat()
    write(path, FINDING)
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert path.stat().st_size == stat.st_size
    code, stdout, _ = jaxfix(path, "check", *cache)
    assert code == 1 and "JF101" in stdout


MIDDLE = """\
import jax

from pkg import util

LOG = []


@jax.jit
def local(x):
    return util.save(LOG, x)


def scale(x):
    return util.save(LOG, x * 2)
"""
UTIL = HELPER.replace("save_blob", "save")
STEP = CALLER.replace("from pkg.io import {name}", "from pkg.middle import scale").format(
    name="scale"
)


def test_an_edit_above_a_part_analyses_the_part_of_the_edited_text(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`scale` is entered from the caller's traced call: its later round analyses a part of
    `middle.py`. Lines added above it move the part; the edited file is analysed again in its
    two rounds, the second on the part of its new text, and the run gives the findings of a run
    without the cache (both calls of `util.save` traced: from `local`, and from `scale`)."""
    monkeypatch.setattr(engine, "MIN_OUTLINED", 0)
    root = package(tmp_path / "tree", {"util.py": UTIL, "middle.py": MIDDLE, "train.py": STEP})
    cache = ["--cache-dir", str(tmp_path / "cache")]
    before = jaxfix(root, "check", *cache)
    assert findings(before[1]) == [(str(root / "pkg" / "util.py") + ":5", "JF101")]
    write(root / "pkg" / "middle.py", '"""Moved down."""\n\n' + MIDDLE)
    cut: list[str] = []
    text_of = Part.text
    monkeypatch.setattr(Part, "text", lambda part, text: cut.append(text_of(part, text)) or cut[-1])
    analysed = counted(monkeypatch, runner, "process")
    looked_up = counted(monkeypatch, Cache, "lookup")
    parsed = counted(monkeypatch, firstpass, "parse")
    assert jaxfix(root, "check", *cache, "--jobs", "1") == before
    # Its two rounds, then twice more as an importer of `util.save`, whose fix's callback it
    # may have to wait for (`project.WAITS`): told, then told every importer can.
    assert analysed == [root / "pkg" / "middle.py"] * 4
    assert len(looked_up) == 4  # its four rounds: the rest of the run is replayed
    assert len(parsed) == 1  # the second round's part is cut from the first round's tree
    assert len(cut) == 1
    lines = cut[0].splitlines()
    assert lines[14:16] == ["def scale(x):", "    return util.save(LOG, x * 2)"]
    assert lines[0] == "" and "def local(x):" not in lines
    assert jaxfix(root, "check", "--no-cache") == before


def test_a_later_rounds_outcome_read_from_the_cache_has_the_first_rounds_facts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A part's outcome tells only its own traced calls; read back from the cache, as when
    analysed, it adds the first round's (`local`'s call of `util.save`) and the file's
    outline, whether or not other files of the batch were analysed."""
    monkeypatch.setattr(engine, "MIN_OUTLINED", 0)
    path = package(tmp_path, {"middle.py": MIDDLE}) / "pkg" / "middle.py"
    first_job = batch._with_project(batch.Job(), ("pkg",), None)
    entries = (batch.project.Entry("scale", (0,), reason="called from traced `pkg.train.step`"),)
    cache = Cache(tmp_path / "cache")
    with Workers() as workers:
        analyser = batch._Analyser(1, cache, workers)
        first = analyser.outcomes({0: (path, first_job)})[0]
        part = batch._part(first, entries)
        assert part is not None
        later_job = batch._with_project(batch.Job(), ("pkg",), entries, part)
        analysed = analyser.outcomes({0: (path, later_job)})[0]
        looking_up = batch._Analyser(1, cache, workers)
        looking_up.outcomes({0: (path, first_job)})
        looked_up = looking_up.outcomes({0: (path, later_job)})[0]
    callers = {call.entry.reason for call in analysed.facts.calls_out}
    assert callers == {
        "called from traced `pkg.middle.local`",
        "called from traced `pkg.middle.scale`",
    }
    assert analysed.facts.outline == first.facts.outline is not None
    assert looked_up.facts == analysed.facts
    assert looking_up.rounds[path] == analyser.rounds[path]  # both read from the cache


def test_the_cache_key_covers_every_file_jaxfix_reads() -> None:
    """A regenerated rule index (`rules.json`) or model table changes the results: a cache
    keyed without it would give the old ones."""
    import jaxfix
    from jaxfix.run.cache import CODE_SUFFIXES

    root = Path(jaxfix.__file__).parent
    shipped = {
        path.suffix
        for folder in (root, root.parent / "codemods")
        for path in folder.rglob("*")
        if path.is_file() and "__pycache__" not in path.parts
    }
    assert shipped <= set(CODE_SUFFIXES)
