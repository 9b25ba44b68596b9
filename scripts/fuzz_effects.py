"""Long run of the effects property: no rewrite loses or changes an effect.

    .venv/bin/python scripts/fuzz_effects.py --count 2000 [--jobs 2] [--seed 0] [--chunk 50]

Generates `--count` multi-module projects (`tests.project_programs.projects`), in chunks spread
over `--jobs` processes, each chunk a Hypothesis run with its own seed (`--seed` + chunk number,
so that a run can be repeated) whose projects are checked together: `jaxfix apply
--unsafe-fixes` over a copy of each, then the runs of every project the apply changed and left
no finding in, the before project with jit disabled and the after one with host callbacks
deferred, in one interpreter (`tests.project_programs.check_projects`). Prints the counts, the
failures grouped by what went wrong (each group's smallest project in full), and exits 1 if any
fixed project's effects differ from its concrete run (or it fails to run).
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from collections import Counter
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.project_programs import (  # noqa: E402
    AFTER_ERROR,
    APPLY_ERROR,
    BEFORE_ERROR,
    DIFFER,
    EQUAL,
    REMAINING,
    RUNNER_ERROR,
    UNCHANGED,
    UNFIXED,
    Checked,
    check_projects,
    drawn,
)

# The statuses that fail the run: a fixed project that does not do what its concrete run does.
FAILING = (DIFFER, AFTER_ERROR, UNFIXED)
_DETAILS = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|\d+|/\S+")


def run_chunk(chunk_seed: int, count: int) -> tuple[list[Checked], float]:
    """The checks of one chunk's projects, and the seconds they took."""
    started = time.perf_counter()
    checked = check_projects(drawn(count, chunk_seed))
    return checked, time.perf_counter() - started


def signature(checked: Checked) -> str:
    """What went wrong, less its values: failures alike share it."""
    first = checked.detail.splitlines()[0] if checked.detail else ""
    if checked.status in (AFTER_ERROR, UNFIXED) and ":" in first:
        first = first.split(":")[0]  # the exception's name
    first = _DETAILS.sub("_", first).split(";")[0]
    return f"{checked.status}: {first[:120]}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=2000, help="projects to generate")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--chunk", type=int, default=50, help="projects per interpreter")
    parser.add_argument("--show", type=int, default=3, help="groups shown in full")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    sizes = [min(args.chunk, args.count - start) for start in range(0, args.count, args.chunk)]
    checked: list[tuple[int, Checked]] = []
    busy = 0.0
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        futures = {
            pool.submit(run_chunk, args.seed + index, size): args.seed + index
            for index, size in enumerate(sizes)
        }
        for done, future in enumerate(as_completed(futures), 1):
            results, seconds = future.result()
            busy += seconds
            checked += [(futures[future], result) for result in results]
            if done % 5 == 0 or done == len(futures):
                print(f"   {done}/{len(futures)} chunks", file=sys.stderr)
    wall = time.perf_counter() - started
    counts = Counter(result.status for _, result in checked)
    compared = counts[EQUAL] + counts[DIFFER] + counts[AFTER_ERROR] + counts[UNFIXED]
    print(f"== {len(checked)} projects in {wall:.0f} s ({args.jobs} jobs)")
    print(f"   {1000 * busy / max(1, len(checked)):.0f} ms of a job per project")
    wholly = compared + counts[BEFORE_ERROR] + counts[RUNNER_ERROR]
    print(f"   fixed wholly (changed, no finding left): {wholly}")
    print(f"   compared (before concrete, after deferred): {compared}")
    print(f"   effects equal:                  {counts[EQUAL]}")
    print(f"   effects differ:                 {counts[DIFFER]}")
    print(f"   after-run errors:               {counts[AFTER_ERROR]}")
    print(f"   tracer left (a missed finding): {counts[UNFIXED]}")
    print(f"   apply errors:                   {counts[APPLY_ERROR]}")
    print(f"   skipped, findings remain:       {counts[REMAINING]}")
    print(f"   skipped, nothing changed:       {counts[UNCHANGED]}")
    print(f"   skipped, before not concrete:   {counts[BEFORE_ERROR]}")
    print(f"   runner errors:                  {counts[RUNNER_ERROR]}")
    groups: dict[str, list[tuple[int, Checked]]] = {}
    for chunk_seed, result in checked:
        if result.status in (*FAILING, APPLY_ERROR, RUNNER_ERROR):
            groups.setdefault(signature(result), []).append((chunk_seed, result))
    ordered = sorted(groups.items(), key=lambda item: -len(item[1]))
    if ordered:
        print("\nfailures by kind:")
        for name, members in ordered:
            print(f"   {len(members):5}  {name}")
    for name, members in ordered[: args.show]:
        chunk_seed, smallest = min(members, key=lambda m: len(m[1].project.show()))
        print(f"\n#### {name} ({len(members)}; the smallest, chunk seed {chunk_seed})")
        print(smallest.show())
    return 1 if any(counts[status] for status in FAILING) else 0


if __name__ == "__main__":
    sys.exit(main())
