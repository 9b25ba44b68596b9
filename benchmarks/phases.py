"""Where a cold `jaxfix check` spends its CPU time: each phase, in the first round and in the
rounds across modules.

    .venv/bin/python benchmarks/phases.py [PATH] [--cache DIR] [--jobs N]

Runs `jaxfix check --no-cache --jobs 1 PATH` in this process (default PATH: a copy of the
corpus of `benchmarks/bench.py`, built by `benchmarks/corpus.py`), with a CPU timer
(`time.process_time`, every thread) around the functions each phase is (`PHASES`), and prints,
for the first round and for the later rounds across modules: the analyses, the source they
read (and of it, what CPython parsed: a later round parses a part of a file), their wall time
and the CPU time of each phase. A phase is timed where it is entered
first: the rules' statements asked for inside the facts for other modules count as those
facts. With `--jobs N` (N > 1) the files are analysed by worker processes, as a plain check
does: then only the wall times are measured.

The timers replace module attributes by name, for the run only. The test suite measures a
small package with this script's `measure`, so a phase whose function is renamed or no longer
called fails there instead of reading as zero here.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import importlib
import io
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# (label, module, attribute, inside): each phase's function, as the engine calls it; `inside`
# names the phase it is part of (its time counts there too).
PHASES: tuple[tuple[str, str, str, str | None], ...] = (
    ("CPython's parse", "jaxfix.analysis.firstpass", "parse", None),
    ("analysis", "jaxfix.run.engine", "analyse_file", None),
    ("  of which the declarations walk", "jaxfix.analysis.flow", "declared", "analysis"),
    ("candidates", "jaxfix.analysis.candidates_read", "collect", None),
    ("facts for other modules", "jaxfix.run.engine", "_note_facts", None),
    ("rules' statements", "jaxfix.analysis.candidates", "Candidates.statements", None),
    ("LibCST and the rules", "jaxfix.run.cst_run", "run_on", None),
)
FIRST, LATER, OTHER = "first round", "rounds across modules", "other rounds"
PARSE = PHASES[0][0]


@dataclass
class Group:
    """The analyses of one part of the run, and the CPU time of each phase in them."""

    analyses: int = 0
    files: set[str] = field(default_factory=set)
    source_bytes: int = 0
    parsed: int = 0  # characters CPython parsed (a part of a file: its other lines blank)
    wall: float = 0.0  # the batches' wall time, workers or not
    cpu: float = 0.0  # all of the analyses (in this process only)
    phases: dict[str, float] = field(default_factory=dict)
    calls: dict[str, int] = field(default_factory=dict)
    rounds: int = 0


@dataclass
class Report:
    # The first round; the rounds of tracing across modules; the files analysed again for what
    # the first round found in others (a decorator of the run that applies a transform, a
    # function of the run that returns a serialization).
    groups: dict[str, Group] = field(
        default_factory=lambda: {FIRST: Group(), LATER: Group(), OTHER: Group()}
    )
    findings_line: str = ""


def measure(path: Path, jobs: int = 1) -> Report:
    """Check `path` cold with `jobs` worker processes (1: in this process, each phase timed),
    the wall time of each batch of analyses measured; the patched functions are restored
    afterwards."""
    from jaxfix.cli import main
    from jaxfix.run import batch, runner

    report = Report()
    current = [report.groups[FIRST]]
    open_phases: list[str] = []  # the phases being timed, outermost first

    def timed(label: str, inside: str | None, function: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(function)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if open_phases and (inside is None or inside not in open_phases):
                return function(*args, **kwargs)  # part of the phase already timed
            group = current[0]
            group.calls[label] = group.calls.get(label, 0) + 1
            if label == PARSE:
                group.parsed += len(args[0])
            open_phases.append(label)
            start = time.process_time()
            try:
                return function(*args, **kwargs)
            finally:
                group.phases[label] = group.phases.get(label, 0.0) + time.process_time() - start
                open_phases.pop()

        return wrapper

    def analysed(function: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(function)
        def wrapper(file: Path, job: Any) -> Any:
            start = time.process_time()
            try:
                return function(file, job)
            finally:
                current[0].cpu += time.process_time() - start

        return wrapper

    across = [False]  # within the rounds across modules

    def rounds_across(function: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(function)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            across[0] = True
            try:
                return function(*args, **kwargs)
            finally:
                across[0] = False

        return wrapper

    def batch_of(function: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(function)
        def wrapper(self: Any, tasks: Any) -> Any:
            if not tasks:
                return function(self, tasks)
            first = report.groups[FIRST].rounds == 0
            group = current[0] = report.groups[FIRST if first else LATER if across[0] else OTHER]
            group.rounds += 1
            for file, _ in tasks.values():
                group.analyses += 1
                group.files.add(str(file))
                with contextlib.suppress(OSError):
                    group.source_bytes += file.stat().st_size
            start = time.perf_counter()
            try:
                return function(self, tasks)
            finally:
                group.wall += time.perf_counter() - start

        return wrapper

    patches: list[tuple[object, str, Callable[..., Any]]] = []
    for label, module_name, attribute, inside in PHASES:
        owner: object = importlib.import_module(module_name)
        *classes, name = attribute.split(".")
        for class_name in classes:
            owner = getattr(owner, class_name)
        patches.append((owner, name, timed(label, inside, getattr(owner, name))))
    patches.append((runner, "process", analysed(runner.process)))
    patches.append((batch, "_trace_across_modules", rounds_across(batch._trace_across_modules)))
    patches.append((batch._Analyser, "outcomes", batch_of(batch._Analyser.outcomes)))
    output = io.StringIO()
    quiet = contextlib.redirect_stdout(output), contextlib.redirect_stderr(output)
    with _patched(patches), quiet[0], quiet[1], contextlib.suppress(SystemExit):
        main(["check", "--no-cache", "--jobs", str(jobs), str(path)])
    summaries = [line for line in output.getvalue().splitlines() if line.startswith("Checked")]
    report.findings_line = summaries[-1] if summaries else output.getvalue().strip()
    return report


@contextlib.contextmanager
def _patched(patches: Sequence[tuple[object, str, Callable[..., Any]]]) -> Iterator[None]:
    saved = [(owner, name, owner.__dict__[name]) for owner, name, _ in patches]
    try:
        for owner, name, replacement in patches:
            setattr(owner, name, replacement)
        yield
    finally:
        for owner, name, original in saved:
            setattr(owner, name, original)


def render(report: Report) -> str:
    """The report as a table: a column per group that analysed something."""
    groups = [(name, group) for name, group in report.groups.items() if group.analyses]
    # Analysed in this process ("-": by workers).
    here = any(g.cpu for _, g in groups)
    rows: list[tuple[str, list[str]]] = [
        ("analyses", [f"{g.analyses} ({len(g.files)} files)" for _, g in groups]),
        ("rounds", [f"{g.rounds}" for _, g in groups]),
        ("source read, MB", [f"{g.source_bytes / 1e6:.1f}" for _, g in groups]),
        *([("  of which parsed, MB", [_cpu(g, g.parsed / 1e6) for _, g in groups])] * here),
        ("wall s", [f"{g.wall:.2f}" for _, g in groups]),
    ]
    if here:
        rows.append(("CPU s, all of the analyses", [_cpu(g, g.cpu) for _, g in groups]))
        for label, *_ in PHASES:
            rows.append((f"  {label}", [_cpu(g, g.phases.get(label, 0.0)) for _, g in groups]))
    width = max(len(label) for label, _ in rows) + 2
    lines = [f"{'':{width}}" + "".join(f"{name:>24}" for name, _ in groups)]
    lines.append("-" * (width + 24 * len(groups)))
    for label, cells in rows:
        lines.append(f"{label:{width}}" + "".join(f"{cell:>24}" for cell in cells))
    return "\n".join([*lines, "", report.findings_line])


def _cpu(group: Group, seconds: float) -> str:
    return f"{seconds:.2f}" if group.cpu else "-"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", nargs="?", type=Path, help="what to check (default: the corpus)")
    parser.add_argument("--cache", type=Path, help="the corpus' install folder root")
    parser.add_argument(
        "--jobs", type=int, default=1, help="worker processes (phases are timed with 1 only)"
    )
    options = parser.parse_args(argv)
    if options.path is not None:
        print(render(measure(options.path, options.jobs)))
        return 0
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from corpus import DEFAULT_CACHE, copy_sources, install, site_folder

    site = site_folder(options.cache or DEFAULT_CACHE)
    install(site)
    with tempfile.TemporaryDirectory(prefix="jaxfix-phases-") as work:
        corpus = copy_sources(site, Path(work))
        print(render(measure(corpus.root, options.jobs)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
