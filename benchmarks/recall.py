"""Recall on realistic bug programs: is each flagged, and does its fix run under jax?

`benchmarks/recall/` holds small programs of the kind users report (a scan body that appends
to a list, a memo dict of the user's own object, a logger kept in `self.log`, a SQLite write
in a jitted step...), each a bug under jax, except the `lookalike_*` ones, which run fine and
must stay silent. For each program the script runs it under jax (the class of the exception it
raises, or "ran": a silent bug prints tracers or a wrong value), runs `jaxfix check`, then
`jaxfix apply --unsafe-fixes` on a copy and runs the rewritten program, with host callbacks
deferred as on an accelerator. It prints one row per program and the totals.

Usage: `.venv/bin/python benchmarks/recall.py [-j N] [NAME ...]` (needs jax, as the fixture
proofs do). With names, only the programs whose file name contains one of them are measured (the
totals count those only); `-j N` measures N programs at a time, in threads that each wait on
their own subprocesses, and still prints the rows in name order.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from jaxfix.proofs.cases import Callbacks, run_programs

PROGRAMS = Path(__file__).resolve().parent / "recall"
FINDING = re.compile(r"^\S+:\d+:\d+: (JF\d+) ", re.M)


@dataclass(frozen=True)
class Row:
    name: str
    before: str  # the error the program raises under jax, "ran", or that it hangs
    codes: tuple[str, ...]
    after: str  # "-" when nothing was rewritten, else "ran" or the error the fix leaves

    @property
    def lookalike(self) -> bool:
        return self.name.startswith("lookalike_")


def python(path: Path) -> str:
    """The class of the exception `path` raises under jax ("TimeoutError" when it hangs), or
    "ran". It runs as the fixture proofs run programs: host callbacks deferred to the next
    `jax.effects_barrier()`, as an accelerator may run them, so that a rewrite that reads a
    callback's effect too early fails here too."""
    (run,) = run_programs([path], callbacks=Callbacks.DEFERRED)
    return "ran" if run.error is None else run.error[0]


def jaxfix(*args: str, cwd: Path) -> str:
    command = [sys.executable, "-m", "jaxfix", *args, "--no-cache"]
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True).stdout


def measure(program: Path, work: Path) -> Row:
    folder = work / program.stem
    folder.mkdir()
    shutil.copy(program, folder / program.name)
    before = python(folder / program.name)
    codes = tuple(FINDING.findall(jaxfix("check", program.name, cwd=folder)))
    original = (folder / program.name).read_text()
    jaxfix("apply", "--unsafe-fixes", program.name, cwd=folder)
    changed = (folder / program.name).read_text() != original
    after = python(folder / program.name) if changed else "-"
    return Row(program.stem, before, codes, after)


def select(programs: Path, names: Sequence[str]) -> list[Path]:
    """The programs under `programs` in name order; with `names`, those whose file name
    contains one of them."""
    found = sorted(programs.glob("*.py"))
    return [p for p in found if not names or any(name in p.name for name in names)]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Recall on realistic bug programs.")
    parser.add_argument("names", nargs="*", help="measure only programs whose name contains one")
    parser.add_argument("-j", "--jobs", type=int, default=1, help="programs measured at a time")
    args = parser.parse_args(argv)
    if args.jobs < 1:
        parser.error("--jobs must be at least 1")
    rows = []
    with tempfile.TemporaryDirectory() as tmp, ThreadPoolExecutor(args.jobs) as pool:
        programs = select(PROGRAMS, args.names)
        # map yields in the order of `programs`: each row is printed once those before it are.
        for row in pool.map(lambda program: measure(program, Path(tmp)), programs):
            rows.append(row)
            codes = ", ".join(row.codes) or "-"
            print(f"{row.name:45} {row.before:28} {codes:22} {row.after}", flush=True)
    bugs = [r for r in rows if not r.lookalike]
    flagged = [r for r in bugs if r.codes]
    fixed = [r for r in flagged if r.after == "ran"]
    silent = [r for r in rows if r.lookalike and not r.codes]
    print()
    print(f"bugs flagged: {len(flagged)}/{len(bugs)}")
    print(f"rewritten and running under jax: {len(fixed)}/{len(flagged)}")
    print(f"look-alikes silent: {len(silent)}/{len(rows) - len(bugs)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
