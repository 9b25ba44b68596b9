"""Checking or fixing many files: unchanged files are answered from the cache, the others are
analysed by worker processes, and the outcomes come back in the order of the paths, so that
the output never depends on the number of workers.

This module does not import the engine (nor LibCST): a run that the cache answers entirely
never pays for it.
"""

from __future__ import annotations

import dataclasses
import functools
import os
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from jaxfix.cache import Cache
from jaxfix.diagnostic import Diagnostic
from jaxfix.edits import EditsWanted
from jaxfix.options import DEFAULT, Options
from jaxfix.outcome import Outcome


@dataclass(frozen=True)
class Job:
    """What to do with each file; plain values, sent to every worker."""

    select: tuple[str, ...] = ()  # empty: the default rules
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    fix: bool = False
    unsafe_fixes: bool = False
    edits: EditsWanted = False  # findings carry their fixes as text edits
    options: Options = DEFAULT

    def key(self) -> str:
        """What the findings depend on, for the cache (not `fix`: it stores unchanged files)."""
        return _key(dataclasses.replace(self, fix=False, unsafe_fixes=False))

    def would_fix(self, diagnostics: Iterable[Diagnostic]) -> bool:
        """Whether applying this job's fixes could change a file with these findings."""
        return self.fix and any(
            d.fix_safety is not None and d.fix_safety.applies(self.unsafe_fixes)
            for d in diagnostics
        )


@functools.lru_cache(maxsize=64)
def _key(job: Job) -> str:
    return repr(job)  # many files share a job: computed once for each


def default_jobs() -> int:
    """The number of cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def run_paths(
    items: Iterable[tuple[Path, Job] | Outcome], *, jobs: int, cache: Cache | None
) -> Iterator[Outcome]:
    """The outcome of each (file, job) item in order; an Outcome item (e.g. a discovery error)
    is passed through as it is."""
    items = list(items)
    answered: dict[int, Outcome] = {}
    pending: list[tuple[Path, Job]] = []
    for index, item in enumerate(items):
        if isinstance(item, Outcome):
            answered[index] = item
            continue
        path, job = item
        cached = cache.lookup(path, job.key()) if cache is not None else None
        if cached is not None and not job.would_fix(cached):
            answered[index] = Outcome(str(path), diagnostics=cached)
        else:
            pending.append(item)
    analysed = _analyse(pending, jobs)
    for index, item in enumerate(items):
        if index in answered:
            yield answered[index]
            continue
        outcome = next(analysed)
        if cache is not None and outcome.digest and not outcome.error and not outcome.new_text:
            assert not isinstance(item, Outcome)
            cache.store(item[0], item[1].key(), outcome.digest, outcome.diagnostics)
        yield outcome


def _analyse(pending: Sequence[tuple[Path, Job]], jobs: int) -> Iterator[Outcome]:
    from jaxfix.runner import process  # imports the engine: only when a file needs analysis

    workers = min(jobs, len(pending))
    paths = [path for path, _ in pending]
    file_jobs = [job for _, job in pending]
    if workers <= 1:
        yield from map(process, paths, file_jobs)
        return
    pool = ProcessPoolExecutor(max_workers=workers)
    try:
        chunk = max(1, len(pending) // (workers * 16))
        yield from pool.map(process, paths, file_jobs, chunksize=chunk)
    finally:
        pool.shutdown(cancel_futures=True)
