"""Long fuzzing run: the properties of tests/test_fuzz.py over many generated programs.

    .venv/bin/python scripts/fuzz_long.py --count 10000 [--grammar 1000] [--jobs 2] [--shrink]

Programs come from the JAX-shaped generator (`--count`) and from Hypothesmith (`--grammar`, alone
or spliced into JAX programs), in chunks spread over `--jobs` processes, each chunk a Hypothesis
run with its own seed (`--seed` + chunk number, so that a run can be repeated). Every property
failure is counted, not raised, so that the run goes on; at the end the script prints the
counts and the first failing program, and exits 1 if any property failed. `--shrink` replays the
first failing chunk with Hypothesis's shrinker and prints the minimal failing program.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import hypothesmith  # noqa: E402
from hypothesis import HealthCheck, Phase, given, seed, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from tests.jax_programs import jax_programs  # noqa: E402
from tests.test_fuzz import PropertyFailure, check_program, spliced_programs  # noqa: E402

CHUNK = 250
SOURCES: dict[str, Callable[[], st.SearchStrategy[str]]] = {
    "jax": jax_programs,
    "grammar": lambda: st.one_of(hypothesmith.from_grammar(), spliced_programs()),
}
COUNTERS = ("generated", "unparseable", "with findings", "fixed")
FAILURES = ("error", "second-pass", "compile", "changed", "recheck", "undefined", "slicing")


@dataclass
class Failure:
    source: str
    chunk_seed: int
    kind: str
    detail: str
    program: str


@dataclass
class Stats:
    counts: Counter[str] = field(default_factory=Counter)
    failures: list[Failure] = field(default_factory=list)

    def add(self, other: Stats) -> None:
        self.counts.update(other.counts)
        self.failures.extend(other.failures)


def _settings(examples: int, phases: tuple[Phase, ...]) -> settings:
    return settings(
        max_examples=examples,
        deadline=None,
        database=None,
        phases=phases,
        suppress_health_check=list(HealthCheck),
    )


def run_chunk(source: str, chunk_seed: int, examples: int) -> Stats:
    """Generate `examples` programs from `source` and check each; failures are recorded."""
    stats = Stats()

    @seed(chunk_seed)
    @_settings(examples, (Phase.generate,))
    @given(SOURCES[source]())
    def run(text: str) -> None:
        stats.counts["generated"] += 1
        try:
            outcome = check_program(text)
        except PropertyFailure as failure:
            stats.counts[failure.kind] += 1
            if len(stats.failures) < 5:
                stats.failures.append(
                    Failure(source, chunk_seed, failure.kind, failure.detail, text)
                )
            return
        if outcome is None:
            stats.counts["unparseable"] += 1
            return
        stats.counts["with findings"] += outcome.findings > 0
        stats.counts["fixed"] += outcome.fixed > 0

    run()
    return stats


def shrink(failure: Failure, examples: int) -> str | None:
    """Replay the failing chunk, raising on the same kind of failure, and let Hypothesis shrink."""
    smallest: list[str] = []

    @seed(failure.chunk_seed)
    @_settings(examples, (Phase.generate, Phase.shrink))
    @given(SOURCES[failure.source]())
    def run(text: str) -> None:
        try:
            check_program(text)
        except PropertyFailure as found:
            if found.kind == failure.kind:
                smallest.append(text)
                raise

    with contextlib.suppress(PropertyFailure):
        run()
    return min(smallest, key=len) if smallest else None


def report(name: str, stats: Stats, seconds: float) -> None:
    counts = stats.counts
    print(f"== {name}: {counts['generated']} programs in {seconds:.0f} s")
    if counts["unparseable"]:
        print(f"   rejected by CPython or LibCST (skipped): {counts['unparseable']}")
    print(f"   with findings:      {counts['with findings']}")
    print(f"   fixed:              {counts['fixed']}")
    print(f"   errors:             {counts['error']}  (an exception or a FixError)")
    print(f"   second-pass changes:{counts['second-pass']:>3}")
    print(f"   compile failures:   {counts['compile']}")
    others = ", ".join(f"{counts[kind]} {kind}" for kind in FAILURES[3:])
    print(f"   other failures:     {others}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=10_000, help="JAX-shaped programs")
    parser.add_argument("--grammar", type=int, default=None, help="Hypothesmith programs")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--shrink", action="store_true", help="minimise the first failure")
    args = parser.parse_args(argv)
    grammar = args.count // 10 if args.grammar is None else args.grammar
    failures: list[Failure] = []
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        for source, total in (("jax", args.count), ("grammar", grammar)):
            if total <= 0:
                continue
            started = time.perf_counter()
            stats = Stats()
            sizes = [min(CHUNK, total - start) for start in range(0, total, CHUNK)]
            futures = [
                pool.submit(run_chunk, source, args.seed + index, size)
                for index, size in enumerate(sizes)
            ]
            for done, future in enumerate(as_completed(futures), 1):
                stats.add(future.result())
                if done % 10 == 0 or done == len(futures):
                    print(f"   [{source}] {done}/{len(futures)} chunks", file=sys.stderr)
            report(source, stats, time.perf_counter() - started)
            failures += sorted(stats.failures, key=lambda f: f.chunk_seed)
    if not failures:
        print("all properties held")
        return 0
    first = failures[0]
    print(
        f"\nFIRST FAILURE ({first.source}, seed {first.chunk_seed}): {first.kind}: {first.detail}"
    )
    print(first.program)
    if args.shrink:
        smallest = shrink(first, CHUNK)
        if smallest is not None:
            print("\nSHRUNK:")
            print(smallest)
    return 1


if __name__ == "__main__":
    sys.exit(main())
