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

from jaxfix import project
from jaxfix.cache import Cache
from jaxfix.diagnostic import Diagnostic
from jaxfix.edits import EditsWanted
from jaxfix.options import DEFAULT, Options
from jaxfix.outcome import Outcome

# Rounds of re-analysis for tracing across modules: a call chain through more modules than
# this is followed no further.
MAX_PROJECT_ROUNDS = 5


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
    is passed through as it is.

    Tracing crosses the modules of the run (see `jaxfix.project`): files decorated with another
    file's jit wrapper, and files whose functions other files' traced code calls, are analysed
    again, until no round traces anything new."""
    items = list(items)
    files = [item for item in items if not isinstance(item, Outcome)]
    packages = project.packages_of(path for path, _ in files)
    tasks = {
        index: (item[0], _with_project(item[1], packages, None))
        for index, item in enumerate(items)
        if not isinstance(item, Outcome)
    }
    outcomes = _outcomes(tasks, jobs, cache)
    if packages:
        run = project.ProjectIndex(path for path, _ in tasks.values())
        _apply_project_wrappers(run, tasks, outcomes, jobs, cache)
        _trace_across_modules(run, tasks, outcomes, packages, jobs, cache)
    for index, item in enumerate(items):
        yield item if isinstance(item, Outcome) else outcomes[index]


def _apply_project_wrappers(
    index: project.ProjectIndex,
    tasks: dict[int, tuple[Path, Job]],
    outcomes: dict[int, Outcome],
    jobs: int,
    cache: Cache | None,
) -> None:
    """Analyse again, with them as transforms, the files decorated with a wrapper of jax's
    transforms defined in another file of the run (`@compiled`, `def compiled(fn): return
    jax.jit(fn)`)."""
    wrappers = {
        (tasks[i][0], name) for i, outcome in outcomes.items() for name in outcome.facts.wrappers
    }
    if not wrappers:
        return
    rerun = {}
    for i, outcome in outcomes.items():
        path, job = tasks[i]
        extra = index.wrapped_by_project(path, outcome.facts, wrappers)
        if extra:
            transforms = (*job.options.transforms, *extra)
            options = dataclasses.replace(job.options, transforms=transforms)
            rerun[i] = tasks[i] = (path, dataclasses.replace(job, options=options))
    outcomes.update(_outcomes(rerun, jobs, cache))


def _trace_across_modules(
    index: project.ProjectIndex,
    tasks: dict[int, tuple[Path, Job]],
    outcomes: dict[int, Outcome],
    packages: tuple[str, ...],
    jobs: int,
    cache: Cache | None,
) -> None:
    """Analyse again the files whose traced code calls a function of the run that reaches a
    rule's anchor (now noting those calls precisely), then, round after round, the files
    whose functions such calls trace."""
    index_of = {path: i for i, (path, _) in tasks.items()}
    reaching = index.reaching_anchors({tasks[i][0]: o.facts for i, o in outcomes.items()})
    if not reaching:
        return

    def reaches(target: str) -> bool:
        return index.definition(target) in reaching

    followed = {
        i for i, outcome in outcomes.items() if any(map(reaches, outcome.facts.traced_targets))
    }
    entered: dict[int, tuple[project.Entry, ...]] = {}
    again: dict[int, tuple[project.Entry, ...]] = dict.fromkeys(followed, ())
    for _ in range(MAX_PROJECT_ROUNDS):
        if not again:
            return
        entered.update(again)
        followed |= set(again)
        rerun = {
            i: (tasks[i][0], _with_project(tasks[i][1], packages, e)) for i, e in again.items()
        }
        outcomes.update(_outcomes(rerun, jobs, cache))
        calls = [
            call
            for outcome in outcomes.values()
            for call in outcome.facts.calls_out
            if reaches(call.target)
        ]
        wanted = {index_of[path]: entries for path, entries in index.entries(calls).items()}
        again = {i: e for i, e in wanted.items() if entered.get(i) != e}


def _with_project(
    job: Job, packages: tuple[str, ...], entries: tuple[project.Entry, ...] | None
) -> Job:
    """The job for a file of this run: the run's packages, and the file's entries when it is
    to be followed (None in the first round)."""
    options = dataclasses.replace(
        job.options, packages=packages, follow=entries is not None, entries=entries or ()
    )
    return dataclasses.replace(job, options=options)


def _outcomes(
    tasks: dict[int, tuple[Path, Job]], jobs: int, cache: Cache | None
) -> dict[int, Outcome]:
    """The outcome of each task, from the cache when it holds it."""
    done: dict[int, Outcome] = {}
    pending: dict[int, tuple[Path, Job]] = {}
    for index, (path, job) in tasks.items():
        cached = cache.lookup(path, job.key()) if cache is not None else None
        if cached is not None and not job.would_fix(cached[0]):
            done[index] = Outcome(str(path), diagnostics=cached[0], facts=cached[1])
        else:
            pending[index] = (path, job)
    if not pending:
        return done  # the engine (and LibCST) is never imported
    for (index, (path, job)), outcome in zip(
        pending.items(), _analyse(list(pending.values()), jobs), strict=True
    ):
        if cache is not None and outcome.digest and not outcome.error and not outcome.new_text:
            cache.store(path, job.key(), outcome.digest, outcome.diagnostics, outcome.facts)
        done[index] = outcome
    return done


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
