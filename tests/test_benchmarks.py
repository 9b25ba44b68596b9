"""`benchmarks/phases.py` times the engine's phases by the names of their functions: a phase
renamed or no longer called must fail here, not print zeros on the corpus. `benchmarks/recall.py`
selects its programs by name and measures them in parallel, its rows still in name order."""

from __future__ import annotations

import importlib.util
import sys
import textwrap
import threading
import time
from pathlib import Path
from types import ModuleType

import pytest

from jaxfix.analysis import firstpass
from jaxfix.run import batch, engine

ROOT = Path(__file__).resolve().parent.parent


def _phases() -> ModuleType:
    name = "benchmarks_phases"
    if name not in sys.modules:  # its dataclasses look their module up there
        spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / "phases.py")
        assert spec is not None and spec.loader is not None
        sys.modules[name] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(sys.modules[name])
    return sys.modules[name]


def _package(root: Path) -> Path:
    """A jitted step in `pkg/train.py` that hands its tracer to a helper of `pkg/io.py`, which
    pickles it: found in the second round, by LibCST's rules."""
    package = root / "pkg"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    helper = "import pickle\n\n\ndef save_blob(x):\n    return pickle.dumps(x)\n"
    (package / "io.py").write_text(helper)
    (package / "train.py").write_text(
        textwrap.dedent(
            """\
            import jax

            from pkg.io import save_blob


            @jax.jit
            def step(x):
                save_blob(x)
                return x * 2
            """
        )
    )
    return root


def test_every_phase_is_timed_in_the_round_that_runs_it(tmp_path: Path) -> None:
    phases = _phases()
    report = phases.measure(_package(tmp_path))
    first, later = report.groups[phases.FIRST], report.groups[phases.LATER]
    assert (first.analyses, first.rounds, later.analyses, later.rounds) == (3, 1, 1, 1)
    assert later.files == {str(tmp_path / "pkg" / "io.py")}
    labels = [label for label, *_ in phases.PHASES]
    assert {label for label in labels if first.calls.get(label)} == set(labels) - {
        "LibCST and the rules"  # no finding in a file alone
    }
    assert {"CPython's parse", "analysis", "LibCST and the rules"} <= set(later.calls)
    assert "facts for other modules" not in later.calls  # noted in the first round only
    assert report.findings_line.startswith("Checked 3 files: 1 finding")
    assert first.cpu >= sum(t for label, t in first.phases.items() if not label.startswith(" "))
    assert first.wall > 0 and later.wall > 0
    assert first.parsed == first.source_bytes  # every file whole (ASCII: a byte per character)
    # The engine's own functions are back.
    assert engine._note_facts.__module__ == "jaxfix.run.engine"
    assert not hasattr(firstpass.parse, "__wrapped__")
    assert not hasattr(batch._trace_across_modules, "__wrapped__")


def test_with_workers_the_rounds_are_counted_and_timed_but_not_their_phases(
    tmp_path: Path,
) -> None:
    """Three files go to two workers; the later round's one file is analysed in this process
    (a batch of one starts no worker), and only its phases are timed."""
    phases = _phases()
    alone = phases.measure(_package(tmp_path / "alone"))
    pooled = phases.measure(_package(tmp_path / "pooled"), jobs=2)
    for name in (phases.FIRST, phases.LATER):
        a, b = alone.groups[name], pooled.groups[name]
        assert (b.analyses, b.rounds, len(b.files)) == (a.analyses, a.rounds, len(a.files))
        assert b.wall > 0
    first, later = pooled.groups[phases.FIRST], pooled.groups[phases.LATER]
    assert first.cpu == 0 and not first.phases
    assert later.cpu > 0 and later.phases
    rendered = phases.render(pooled).splitlines()
    parse = next(line for line in rendered if "CPython's parse" in line)
    assert parse.split()[2] == "-"  # the first round's column
    parsed = next(line for line in rendered if "of which parsed" in line).split()[4:]
    assert parsed[0] == "-" and parsed[1] != "-"  # by the workers; by this process


def _recall() -> ModuleType:
    name = "benchmarks_recall"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / "recall.py")
        assert spec is not None and spec.loader is not None
        sys.modules[name] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(sys.modules[name])
    return sys.modules[name]


def test_recall_measures_the_named_programs_in_parallel_and_prints_them_in_name_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The first program takes longest: two workers finish the later ones first, yet the rows
    come in name order; a name filter keeps the programs whose file name contains it."""
    recall = _recall()
    for stem in ("ser_a", "ser_b", "ser_c", "leak_d", "lookalike_ser_e"):
        (tmp_path / f"{stem}.py").write_text("")
    running, most = 0, 0
    lock = threading.Lock()

    def measure(program: Path, work: Path) -> object:
        nonlocal running, most
        with lock:
            running += 1
            most = max(most, running)
        time.sleep(0.3 if program.stem == "ser_a" else 0.05)
        with lock:
            running -= 1
        return recall.Row(program.stem, "ran", ("JF101",), "ran")

    monkeypatch.setattr(recall, "PROGRAMS", tmp_path)
    monkeypatch.setattr(recall, "measure", measure)
    assert recall.main(["-j", "2", "ser_"]) == 0
    rows = [line.split()[0] for line in capsys.readouterr().out.splitlines()[:4]]
    assert rows == ["lookalike_ser_e", "ser_a", "ser_b", "ser_c"]
    assert most == 2
    assert recall.main(["leak", "ser_c"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in out[:2]] == ["leak_d", "ser_c"]
    assert "bugs flagged: 2/2" in out
