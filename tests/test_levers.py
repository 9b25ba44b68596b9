"""The speed levers never change a result: worker processes, the result cache (cold, warm,
after an edit) and the cache's invalidation, all through the real command line.

(The candidate pass and the slice are checked against whole-file analysis in `test_firstpass`
and in fuzzing.)
"""

from __future__ import annotations

import gc
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from jaxfix import engine, runner
from jaxfix.batch import Job
from jaxfix.cli import main
from jaxfix.outcome import Outcome
from jaxfix.proofs import load_cases

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
    for entry in folder.glob("*.json"):
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


def test_a_warm_run_does_not_import_libcst(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text(FINDING, encoding="utf-8")
    script = (
        "import atexit, sys\n"
        "from jaxfix.cli import main\n"
        "atexit.register(lambda: print('libcst' in sys.modules, file=sys.stderr))\n"
        f"main(['check', '--cache-dir', {str(tmp_path / 'cache')!r}, {str(tmp_path)!r}])\n"
    )
    runs = [
        subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
        for _ in range(2)
    ]
    assert [run.returncode for run in runs] == [1, 1]
    assert runs[0].stdout == runs[1].stdout
    assert [run.stderr.splitlines()[-1] for run in runs] == ["True", "False"]


def test_after_an_edit_only_the_edited_file_is_analysed(
    tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = ["--cache-dir", str(tmp_path / "cache")]
    before = jaxfix(tree, "check", *cache)
    edited = tree / "trainer" / "model.py"
    edited.write_text(edited.read_text(encoding="utf-8") + "\n# edited\n", encoding="utf-8")
    analysed: list[Path] = []
    process = runner.process

    def counting(path: Path, job: Job) -> Outcome:
        analysed.append(path)
        return process(path, job)

    monkeypatch.setattr(runner, "process", counting)
    assert jaxfix(tree, "check", *cache, "--jobs", "1") == before
    # Twice: alone, then with the functions train.py's traced code calls (see jaxfix.project).
    assert analysed == [edited, edited]


def test_the_cycle_collector_is_paused_only_while_a_file_is_analysed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "a.py").write_text(FINDING, encoding="utf-8")
    seen: list[bool] = []

    def observing(*args: object, **kwargs: object) -> object:
        seen.append(gc.isenabled())
        return engine.check_text(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(runner, "check_text", observing)
    assert gc.isenabled()
    code, stdout, _ = jaxfix(tmp_path, "check", "--no-cache", "--jobs", "1")
    assert code == 1 and "JF101" in stdout  # the same finding with the collector paused
    assert seen == [False] and gc.isenabled()
