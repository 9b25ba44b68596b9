"""Checking or fixing many files: unchanged files are answered from the cache, the others are
analysed by worker processes, and the outcomes come back in the order of the paths, so that
the output never depends on the number of workers.

This module does not import the engine (nor LibCST): a run that the cache answers entirely
never pays for it.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from jaxfix.analysis import project
from jaxfix.analysis.project import ModuleFacts
from jaxfix.models.parts import Part
from jaxfix.models.transforms import Wrapped
from jaxfix.run.cache import Cache, RunRecord
from jaxfix.run.job import Job
from jaxfix.run.outcome import Outcome
from jaxfix.run.stamps import digest
from jaxfix.run.workers import Workers

# Rounds of re-analysis for tracing across modules: a call chain through more modules than
# this is followed no further.
MAX_PROJECT_ROUNDS = 4


def default_jobs() -> int:
    """The number of cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


# A worker process (forked, each outcome pickled back, and the imports its files need paid
# again in each worker) is repaid past about a third of a second of analysis: a file takes
# about 15 ms (fixture-sized files with findings; LibCST builds their fixes) and 0.6 ms more
# per kilobyte (library modules). Measured with `jaxfix check --no-cache -j 1` against `-j 2`
# on 2 cores: 16 library modules (300 KB) took as long either way, 32 small modules with
# findings a quarter less time with 2 workers, and 2-8 files longer with them.
_WORKER_REPAID_AFTER = 0.3
_SECONDS_PER_FILE = 0.015
_SECONDS_PER_BYTE = 0.6e-6


def _workers_for(sizes: Sequence[int]) -> int:
    """One worker per core (`default_jobs`), fewer for files of `sizes` (bytes) too few to
    repay them."""
    cores = default_jobs()
    enough = (cores - 1) * _WORKER_REPAID_AFTER
    estimate = 0.0
    for size in sizes:
        estimate += _SECONDS_PER_FILE + _SECONDS_PER_BYTE * size
        if estimate >= enough:
            return min(cores, len(sizes))
    return min(len(sizes), 1 + int(estimate / _WORKER_REPAID_AFTER))


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0  # the analysis reports why the file cannot be read


class Progress(Protocol):
    """Where a run reports its progress (a progress bar): `more` files to analyse, then each
    one `done`, cached or not; a round of tracing across modules adds the files it analyses
    again."""

    def more(self, count: int) -> None: ...

    def done(self, count: int = 1) -> None: ...


def run_paths(
    items: Iterable[tuple[Path, Job] | Outcome],
    *,
    jobs: int | None,
    cache: Cache | None,
    progress: Progress | None = None,
) -> Iterator[Outcome]:
    """The outcome of each (file, job) item in order; an Outcome item (e.g. a discovery error)
    is passed through as it is. `jobs`: worker processes (None: as many as the run repays, up
    to one per core).

    Tracing crosses the modules of the run (see `jaxfix.analysis.project`): files decorated with
    another file's jit wrapper, and files whose functions other files' traced code calls, are
    analysed again, until no round traces anything new."""
    items = list(items)
    outcomes, _ = _run(items, jobs, cache, progress, replay=True)
    for index, item in enumerate(items):
        yield item if isinstance(item, Outcome) else outcomes[index]


def project_jobs(
    items: Iterable[tuple[Path, Job] | Outcome], *, jobs: int, cache: Cache | None
) -> dict[Path, Job]:
    """The job each file of the run was last analysed with: what the other files of the run
    tell it (the parameters their traced code traces, their jit wrappers, their call sites)
    added to its own. A file checked alone with its job gets the findings this run gives it."""
    tasks = _run(list(items), jobs, cache, None, replay=False)[1]
    return dict(tasks.values())


def _run(
    items: Sequence[tuple[Path, Job] | Outcome],
    jobs: int | None,
    cache: Cache | None,
    progress: Progress | None,
    replay: bool,
) -> tuple[dict[int, Outcome], dict[int, tuple[Path, Job]]]:
    """The outcome of each file, by its index in `items`, and the task it was last analysed
    as; `replay`: the findings of the latest run of the same files and jobs, when the cache
    holds it (all of them when no file changed since, the unedited files' after an edit that
    tells the run nothing new)."""
    places = {item[0]: project.place_of(item[0]) for item in items if not isinstance(item, Outcome)}
    packages = project.packages_of(places.values())
    tasks = _first_round(items, packages)
    key = _run_key(tasks, places)
    record = cache.run(key) if cache is not None and replay else None
    if record is not None and len(record.digests) != len(tasks):  # foreign or damaged
        record = None
    outcomes = None
    if cache is not None and record is not None:
        outcomes = _replayed(cache, record, tasks, progress)
    if outcomes is None:
        with Workers() as workers:
            analyser = _Analyser(jobs, cache, workers, progress)
            if cache is not None and record is not None:
                outcomes = _replayed_around_edits(cache, record, tasks, analyser)
            if outcomes is None:
                outcomes = analyser.outcomes(tasks)
                if packages:
                    facts = {tasks[i][0]: o.facts for i, o in outcomes.items()}
                    run = project.ProjectIndex(places, facts)
                    _apply_project_wrappers(run, tasks, outcomes, analyser)
                    _share_static_classes(run, tasks, outcomes, analyser)
                    _trace_across_modules(run, tasks, outcomes, packages, analyser)
                    _serialize_at_foreign_call_sites(run, tasks, outcomes, analyser)
        analyser.record(key, tasks, outcomes)
    for index, (path, _) in tasks.items():
        outcomes[index] = outcomes[index].with_parts_apart(places[path].module)
    _name_the_parts(outcomes)
    return outcomes, tasks


def _name_the_parts(outcomes: dict[int, Outcome]) -> None:
    """Each fix over several files says which other files it changes, in its title."""
    files: dict[str, list[str]] = {}
    for outcome in outcomes.values():
        for part in outcome.parts:
            if outcome.display not in files.setdefault(part.part_of, []):
                files[part.part_of].append(outcome.display)
    if not files:
        return
    for outcome in outcomes.values():
        outcome.diagnostics = [
            dataclasses.replace(
                d, fix_title=f"{d.fix_title}; it also changes {', '.join(files[d.moves])}"
            )
            if d.moves in files and d.fix_title
            else d
            for d in outcome.diagnostics
        ]


def _first_round(
    items: Sequence[tuple[Path, Job] | Outcome], packages: tuple[str, ...]
) -> dict[int, tuple[Path, Job]]:
    """Each file with its job for the first round, by its index in `items` (the files of one
    configuration share one job, made once)."""
    made: dict[Job, Job] = {}
    tasks = {}
    for index, item in enumerate(items):
        if not isinstance(item, Outcome):
            path, job = item
            if job not in made:
                made[job] = _with_project(job, packages, None)
            tasks[index] = (path, made[job])
    return tasks


def _run_key(tasks: dict[int, tuple[Path, Job]], places: dict[Path, project.Place]) -> str:
    """What the outcomes of a run depend on besides the files' contents: each file, the module
    it is and its job, in order."""
    lines = (
        f"{os.path.abspath(path)}\t{places[path].module}\t{job.key()}"
        for path, job in tasks.values()
    )
    return digest("\n".join(lines).encode())


def _replayed(
    cache: Cache, run: RunRecord, tasks: dict[int, tuple[Path, Job]], progress: Progress | None
) -> dict[int, Outcome] | None:
    """The outcomes of the latest run with this key, if no file has changed since (and no
    finding is to be fixed): no round across modules, no file read."""
    if [cache.digest(path) for path, _ in tasks.values()] != run.digests:
        return None
    found = run.findings
    if any(job.would_fix(d) for (_, job), d in zip(tasks.values(), found, strict=True)):
        return None
    if progress is not None:
        progress.more(len(found))
        progress.done(len(found))
    return {
        index: Outcome(str(path), diagnostics=diagnostics)
        for (index, (path, _)), diagnostics in zip(tasks.items(), found, strict=True)
    }


def _replayed_around_edits(
    cache: Cache, run: RunRecord, tasks: dict[int, tuple[Path, Job]], analyser: _Analyser
) -> dict[int, Outcome] | None:
    """The outcomes of the latest run of `key` after some files were edited, when each edited
    file, analysed again in each of its rounds of that run, tells the run what it told it
    then: no other file's job can change, and the other files' findings are replayed without
    reading their results or tracing across modules again. None (a whole run is needed) when
    some edited file tells the run something else, or has a round that cannot be replayed."""
    if any(job.fix for _, job in tasks.values()):
        return None
    edited: dict[int, list[tuple[Job, str]]] = {}  # each round's job and what it told the run
    for n, (index, (path, job)) in enumerate(tasks.items()):
        if cache.digest(path) == run.digests[n]:
            continue
        replays = []
        for r, (job_key, told) in enumerate(run.rounds[n]):
            again = job if r == 0 else _job_of_round(job, cache.options(path, job_key))
            if again is None or again.key() != job_key:
                return None
            replays.append((again, told))
        if not replays:
            return None
        edited[index] = replays
    if not edited:
        return None
    outcomes: dict[int, Outcome] = {}
    for r in range(max(map(len, edited.values()))):
        now = {}
        for i, done in edited.items():
            if r < len(done):
                job = done[r][0]
                if job.options.part is not None:  # the part its entries need in the file now
                    part = _part(outcomes[i], job.options.entries)
                    job = dataclasses.replace(
                        job, options=dataclasses.replace(job.options, part=part)
                    )
                    done[r] = (job, done[r][1])
                now[i] = (tasks[i][0], job)
        for i, outcome in analyser.outcomes(now).items():
            told = analyser.rounds[now[i][0]][-1][1]
            if not told or told != edited[i][r][1]:  # "": not stored (an error)
                analyser.rounds.clear()  # the whole run notes them again
                return None
            outcomes[i] = outcome
    for i, done in edited.items():
        tasks[i] = (tasks[i][0], done[-1][0])
    for n, (index, (path, _)) in enumerate(tasks.items()):
        if index not in outcomes:
            outcomes[index] = Outcome(str(path), diagnostics=run.findings[n])
            analyser.replayed(path, run.digests[n], run.rounds[n])
    if analyser.progress is not None:
        analyser.progress.more(len(tasks) - len(edited))
        analyser.progress.done(len(tasks) - len(edited))
    return outcomes


def _apply_project_wrappers(
    index: project.ProjectIndex,
    tasks: dict[int, tuple[Path, Job]],
    outcomes: dict[int, Outcome],
    analyser: _Analyser,
) -> None:
    """Analyse again, with them as transforms, the files decorated with a wrapper of jax's
    transforms defined in another file of the run (`@compiled`, `def compiled(fn): return
    jax.jit(fn)`)."""
    wrappers = {
        (tasks[i][0], name): wrapped
        for i, outcome in outcomes.items()
        for name, wrapped in outcome.facts.wrappers.items()
    }
    if not wrappers:
        return
    rerun = {}
    for i, outcome in outcomes.items():
        path, job = tasks[i]
        extra = index.wrapped_by_project(path, outcome.facts, wrappers)
        if extra:
            transforms = (*job.options.transforms, *(name for name, _ in extra))
            wrapped = (*job.options.wrapped, *extra)
            options = dataclasses.replace(job.options, transforms=transforms, wrapped=wrapped)
            rerun[i] = tasks[i] = (path, dataclasses.replace(job, options=options))
    outcomes.update(analyser.outcomes(rerun))


def _share_static_classes(
    index: project.ProjectIndex,
    tasks: dict[int, tuple[Path, Job]],
    outcomes: dict[int, Outcome],
    analyser: _Analyser,
) -> None:
    """Tell each file the metadata fields of the classes it imports from other files of the
    run (`sys: System`, `System` declaring `mj_model = struct.field(pytree_node=False)`); analyse
    again those that use one (in an annotation or a call) and whose findings
    or traced calls into the run may change with it (the others keep it for the later
    rounds). A file whose analysis asked nothing they answer otherwise than no static classes
    (`ModuleFacts.static_queries`) would be analysed again step for step the same: it is not
    (a fix's passes are)."""
    if not any(outcome.facts.static_classes for outcome in outcomes.values()):
        return
    rerun = {}
    for i, outcome in outcomes.items():
        known = index.imported_static_classes(outcome.facts)
        if not known:
            continue
        path, job = tasks[i]
        options = dataclasses.replace(job.options, static_classes=known)
        tasks[i] = (path, dataclasses.replace(job, options=options))
        uses = not outcome.facts.class_uses.isdisjoint(name for name, _ in known)
        queries = outcome.facts.static_queries
        asked = job.fix or outcome.error or not project.answers_alike(queries, dict(known))
        if uses and asked and (outcome.diagnostics or outcome.facts.calls_out):
            rerun[i] = tasks[i]
    outcomes.update(analyser.outcomes(rerun))


def _trace_across_modules(
    index: project.ProjectIndex,
    tasks: dict[int, tuple[Path, Job]],
    outcomes: dict[int, Outcome],
    packages: tuple[str, ...],
    analyser: _Analyser,
) -> None:
    """Analyse again, round after round, the files whose functions other files' traced code
    calls, when the function reaches a rule's anchor (themselves or through the functions of
    the run they call): the first round noted every call traced code makes into the run."""
    index_of = {path: i for i, (path, _) in tasks.items()}
    reaching = index.reaching_anchors({tasks[i][0]: o.facts for i, o in outcomes.items()})
    if not reaching:
        return

    def reaches(target: str) -> bool:
        return index.definition(target) in reaching

    def wanted() -> dict[int, tuple[project.Entry, ...]]:
        calls = [
            call
            for outcome in outcomes.values()
            for call in outcome.facts.calls_out
            if reaches(call.target)
        ]
        return {index_of[path]: entries for path, entries in index.entries(calls).items()}

    entered: dict[int, tuple[project.Entry, ...]] = {}
    again = wanted()
    for _ in range(MAX_PROJECT_ROUNDS):
        if not again:
            return
        entered.update(again)
        for i, entries in again.items():
            part = _part(outcomes[i], entries)
            tasks[i] = (tasks[i][0], _with_project(tasks[i][1], packages, entries, part))
        outcomes.update(analyser.outcomes({i: tasks[i] for i in again}))
        again = {i: e for i, e in wanted().items() if not _same_entries(entered.get(i), e)}


def _same_entries(old: tuple[project.Entry, ...] | None, new: tuple[project.Entry, ...]) -> bool:
    """Whether the file was entered with these entries already, up to their reasons: a new
    caller's name in a message is not worth analysing a file again (a large one: a tenth of a
    second), and a round later there may be yet another."""
    if old is None or len(old) != len(new):
        return False
    return all(
        dataclasses.replace(a, reason="") == dataclasses.replace(b, reason="")
        for a, b in zip(old, new, strict=True)
    )


def _serialize_at_foreign_call_sites(
    index: project.ProjectIndex,
    tasks: dict[int, tuple[Path, Job]],
    outcomes: dict[int, Outcome],
    analyser: _Analyser,
) -> None:
    """A function whose return a rule's fix changes (`project.ReturnChange`) and that other
    files of the run import is rewritten with its call sites there, when every one of them can
    be rewritten; a function whose calls run a fix's host callbacks (`project.WAITS`) has its
    callers wait before they read what those write, when every one can, and the callers'
    functions that run it tell their own callers in turn. The callers are told until nothing
    new is told, then every file of a fix is analysed once more with the fix's verdict
    (`ReturnChange.transaction`): all of it is made, or none."""
    decided: set[tuple[int, project.ReturnChange]] = set()
    verdicts: dict[str, str] = {}  # by fix (`_fix_of`)
    for _ in range(MAX_PROJECT_ROUNDS):  # a verdict can make a definer tell something else
        users = _told_until_settled(index, tasks, outcomes, analyser, verdicts)
        if not users or set(users) <= decided:
            return
        decided |= set(users)
        _decide(index, tasks, outcomes, analyser, users, verdicts)


def _told_until_settled(
    index: project.ProjectIndex,
    tasks: dict[int, tuple[Path, Job]],
    outcomes: dict[int, Outcome],
    analyser: _Analyser,
    verdicts: dict[str, str],
) -> Users:
    """Tell each file what the functions it imports will do, until nothing new is told (a
    caller whose function runs another's callbacks tells its own callers in turn), with the
    `verdicts` known; the functions told of, with their callers."""
    users = _importers_of_return_changes(index, tasks, outcomes)
    told: Users = {}
    for _ in range(MAX_PROJECT_ROUNDS):
        if not users or users == told:
            break
        told = users
        definers = {i: index.places[tasks[i][0]].module for i, _ in told}
        changes = _imports_options(told, verdicts, definers)
        _rerun(tasks, outcomes, analyser, {i: c for i, c in changes.items() if _new(tasks[i], c)})
        users = _importers_of_return_changes(index, tasks, outcomes)
    return told


def _decide(
    index: project.ProjectIndex,
    tasks: dict[int, tuple[Path, Job]],
    outcomes: dict[int, Outcome],
    analyser: _Analyser,
    users: Users,
    verdicts: dict[str, str],
) -> None:
    """Every file of each fix analysed once more with the fix's verdict (noted in
    `verdicts`)."""
    definers = {i: index.places[tasks[i][0]].module for i, _ in users}
    for (definer, returned), callers in users.items():
        key = _fix_of(returned, definers[definer])
        why = verdicts.get(key) or returned.why_not
        why = why or next(
            (
                why
                for i, name in callers
                if (why := _caller_verdict(tasks, outcomes, i, name, returned.keeps_return))
            ),
            "",
        )
        verdicts[key] = why
    _rerun(tasks, outcomes, analyser, _verdict_options(users, verdicts, definers))
    # Both sides are written or neither: a side that failed cancels its group's rewrite.
    failed = False
    for (definer, returned), callers in users.items():
        key = _fix_of(returned, definers[definer])
        group = [definer, *(i for i, _ in callers)]
        errors = [outcomes[i].error for i in group if outcomes[i].error]
        errors += [  # the function itself, for a reason only its own module tells
            r.why_not
            for r in outcomes[definer].facts.return_changes
            if r.function == returned.function and r.why_not
        ]
        if errors and not verdicts[key]:
            verdicts[key] = f"it could not be rewritten: {errors[0]}"
            failed = True
    if failed:
        _rerun(tasks, outcomes, analyser, _verdict_options(users, verdicts, definers))


Users = dict[tuple[int, project.ReturnChange], list[tuple[int, str]]]


def _fix_of(returned: project.ReturnChange, definer: str) -> str:
    """The fix a change is part of, for its verdict: a move after the calls and the waits
    for callbacks that replace it, when it cannot be made, are two fixes of one function."""
    kind = "waits" if returned.keeps_return else "return"
    return f"{kind} {returned.transaction(definer)}"


def _new(task: tuple[Path, Job], change: dict[str, tuple[object, ...]]) -> bool:
    """Whether `change` gives the file options its last analysis did not have."""
    options = task[1].options
    return any(getattr(options, name) != value for name, value in change.items())


def _verdict_options(
    users: Users, verdicts: dict[str, str], definers: dict[int, str]
) -> dict[int, dict[str, tuple[object, ...]]]:
    """The options of every file of a fix: its callers' imports, its definers' verdicts."""
    changes = _imports_options(users, verdicts, definers)
    for definer, returned in users:
        why = verdicts[_fix_of(returned, definers[definer])]
        if returned.keeps_return and not why:
            continue  # its fix is the same, with or without callers that wait
        calls = project.ForeignCalls(returned.function, why, returned.keeps_return)
        known = changes.setdefault(definer, {}).get("foreign_calls", ())
        if calls not in known:
            changes[definer]["foreign_calls"] = (*known, calls)
    return changes


def _importers_of_return_changes(
    index: project.ProjectIndex, tasks: dict[int, tuple[Path, Job]], outcomes: dict[int, Outcome]
) -> Users:
    """For each function whose return a fix changes: the other files that import it, with the
    name they read it by (`encode`, `enc.encode`)."""
    defined = {
        (tasks[i][0], returned.function): (i, returned)
        for i, outcome in outcomes.items()
        for returned in outcome.facts.return_changes
    }
    users: Users = {}
    if not defined:
        return users
    modules = {index.places[path].module: path for path, _ in defined}
    for i, outcome in outcomes.items():
        for raw, absolute in sorted(outcome.facts.imported):
            found = index.definition(absolute)
            if found in defined and found[0] != tasks[i][0]:
                users.setdefault(defined[found], []).append((i, raw))
            elif absolute in modules:  # `from pkg import enc`: `enc.encode`
                for (path, function), key in defined.items():
                    if path == modules[absolute] and path != tasks[i][0]:
                        users.setdefault(key, []).append((i, f"{raw}.{function}"))
    return users


def _caller_verdict(
    tasks: dict[int, tuple[Path, Job]],
    outcomes: dict[int, Outcome],
    caller: int,
    name: str,
    keeps_return: bool = False,
) -> str:
    """Why the call sites of `name` in file `caller` cannot be rewritten ("" when they can)."""
    path = tasks[caller][0]
    if path.name == "__init__.py" and not keeps_return:
        return f"it is re-exported by `{path}`: code outside the run may import it"
    return outcomes[caller].facts.call_sites.get(name, "it is called where jaxfix cannot tell")


def _imports_options(
    users: Users, verdicts: dict[str, str], definers: dict[int, str]
) -> dict[int, dict[str, tuple[object, ...]]]:
    """The `changed_imports` of each caller; allowed where the verdict is known and clean."""
    changes: dict[int, dict[str, tuple[object, ...]]] = {}
    for (definer, returned), callers in users.items():
        allowed = verdicts.get(_fix_of(returned, definers[definer])) == ""
        for caller, name in callers:
            imports = changes.setdefault(caller, {}).get("changed_imports", ())
            new = project.ChangedImport(name, returned, allowed, definers[definer])
            changes[caller]["changed_imports"] = (*imports, new)
    return changes


def _rerun(
    tasks: dict[int, tuple[Path, Job]],
    outcomes: dict[int, Outcome],
    analyser: _Analyser,
    changes: dict[int, dict[str, tuple[object, ...]]],
) -> None:
    """Analyse the files again with these options changed."""
    again = {}
    for i, change in changes.items():
        path, job = tasks[i]
        options = dataclasses.replace(job.options, **change)  # type: ignore[arg-type]
        again[i] = tasks[i] = (path, dataclasses.replace(job, options=options))
    outcomes.update(analyser.outcomes(again))


def _with_project(
    job: Job,
    packages: tuple[str, ...],
    entries: tuple[project.Entry, ...] | None,
    part: Part | None = None,
) -> Job:
    """The job for a file of this run: the run's packages, whose calls its traced code makes
    are noted, the entries other files' traced calls give it (None in the first round) and the
    part of the file they need (None: the whole file)."""
    options = dataclasses.replace(
        job.options, packages=packages, follow=True, entries=entries or (), part=part
    )
    return dataclasses.replace(job, options=options)


def _part(latest: Outcome, entries: tuple[project.Entry, ...]) -> Part | None:
    """The part of a file that `entries` need, when it alone can be analysed again: the file's
    `latest` analysis found nothing (what it found is found again only by the whole file)."""
    outline = latest.facts.outline
    if outline is None or not entries or latest.diagnostics or latest.error:
        return None
    return outline.part(entry.function for entry in entries)


@dataclass(frozen=True)
class _Analyser:
    """How the files of a run are analysed: by `jobs` of the run's `workers` (None: as many
    as each batch repays), through the cache, each file reported to `progress` as it
    completes. It notes the content each file had in each round (None for a file that
    changed during the run) and the rounds each was analysed in, for the cache's record of
    the run."""

    jobs: int | None
    cache: Cache | None
    workers: Workers
    progress: Progress | None = None
    contents: dict[Path, str | None] = dataclasses.field(default_factory=dict)
    # Each file's rounds: the key of each job it was analysed with, in turn, and the digest of
    # what that analysis told the run ("" when it was not stored).
    rounds: dict[Path, list[tuple[str, str]]] = dataclasses.field(default_factory=dict)
    # What each file's tree tells the other modules, from its first round: a later round's
    # analysis notes only its traced calls (`jaxfix.run.engine`), and its outcome gets the rest.
    noted: dict[Path, ModuleFacts] = dataclasses.field(default_factory=dict)

    def outcomes(self, tasks: dict[int, tuple[Path, Job]]) -> dict[int, Outcome]:
        """The outcome of each task, from the cache when it holds it."""
        cache, progress = self.cache, self.progress
        if progress is not None:
            progress.more(len(tasks))
        done: dict[int, Outcome] = {}
        pending: dict[int, tuple[Path, Job]] = {}
        for index, (path, job) in tasks.items():
            cached = cache.lookup(path, job.key()) if cache is not None else None
            if cache is not None and cached is not None and not job.would_fix(cached.diagnostics):
                done[index] = Outcome(str(path), diagnostics=cached.diagnostics, facts=cached.facts)
                self._saw(path, cache.digest(path), job, cached.told)
            else:
                pending[index] = (path, job)
        if progress is not None and done:
            progress.done(len(done))
        # With every outcome cached, the engine (and LibCST) is never imported.
        analysed = _analyse(list(pending.values()), self.jobs, progress, self.workers)
        for (index, (path, job)), outcome in zip(pending.items(), analysed, strict=True):
            told = ""
            if cache is not None and outcome.digest and not outcome.error and not outcome.new_text:
                told = cache.store(
                    path,
                    job.key(),
                    outcome.digest,
                    outcome.diagnostics,
                    outcome.facts,
                    _round_options(job),
                )
            self._saw(path, outcome.digest, job, told)
            done[index] = outcome
        for index, (path, job) in tasks.items():
            facts = done[index].facts
            if not job.options.entries:
                self.noted[path] = facts
            elif path in self.noted:
                done[index].facts = project.with_tree_facts(facts, self.noted[path])
        return done

    def record(
        self, key: str, tasks: dict[int, tuple[Path, Job]], outcomes: dict[int, Outcome]
    ) -> None:
        """Keep the run in the cache, for a later run to replay, when each file was read whole
        and unchanged all along and none was fixed or failed."""
        if self.cache is None:
            return
        if any(o.error or o.new_text is not None for o in outcomes.values()):
            return
        paths = [path for path, _ in tasks.values()]
        contents = [self.contents.get(path) for path in paths]
        now = [self.cache.digest(path) for path in paths]
        if contents == now and all(contents):
            findings = [outcomes[index].diagnostics for index in tasks]
            rounds = [self.rounds.get(path, []) for path in paths]
            self.cache.record(key, RunRecord([str(c) for c in contents], findings, rounds))

    def replayed(self, path: Path, content: str, rounds: list[tuple[str, str]]) -> None:
        """Note a file whose outcome was replayed from the latest run, with its rounds there."""
        self.contents[path] = content
        self.rounds[path] = list(rounds)

    def _saw(self, path: Path, content: str | None, job: Job, told: str) -> None:
        if self.contents.setdefault(path, content) != content:
            self.contents[path] = None
        self.rounds.setdefault(path, []).append((job.key(), told))


def _round_options(job: Job) -> dict[str, Any]:
    """What the rounds across modules change in a file's job, as plain values: enough to
    analyse the file again as that round did (`_replayed_around_edits`)."""
    return {
        "transforms": list(job.options.transforms),
        "static_classes": [[name, list(fields)] for name, fields in job.options.static_classes],
        "wrapped": [[name, dataclasses.asdict(wrapper)] for name, wrapper in job.options.wrapped],
        "entries": [dataclasses.asdict(entry) for entry in job.options.entries],
        "part": job.options.part.plain() if job.options.part is not None else None,
        "changed_imports": [dataclasses.asdict(c) for c in job.options.changed_imports],
        "foreign_calls": [dataclasses.asdict(c) for c in job.options.foreign_calls],
    }


def _job_of_round(job: Job, options: dict[str, Any] | None) -> Job | None:
    """The first round's `job` with the options a later round gave it (`_round_options`)."""
    if options is None:
        return None
    try:
        transforms = tuple(str(name) for name in options["transforms"])
        static_classes = tuple(
            (str(name), tuple(str(f) for f in fields))
            for name, fields in options.get("static_classes", ())
        )
        wrapped = tuple((str(n), Wrapped.from_plain(w)) for n, w in options["wrapped"])
        entries = tuple(project.entry_from_plain(entry) for entry in options["entries"])
        part = Part.from_plain(options["part"]) if options["part"] is not None else None
        changed_imports = tuple(
            project.ChangedImport(
                str(c["name"]),
                project.ReturnChange.from_plain(c["returned"]),
                bool(c["allowed"]),
                str(c["definer"]),
            )
            for c in options["changed_imports"]
        )
        foreign_calls = tuple(project.ForeignCalls(**c) for c in options["foreign_calls"])
    except (KeyError, TypeError, ValueError):
        return None
    changed = dataclasses.replace(
        job.options,
        transforms=transforms,
        wrapped=wrapped,
        static_classes=static_classes,
        entries=entries,
        part=part,
        changed_imports=changed_imports,
        foreign_calls=foreign_calls,
    )
    return dataclasses.replace(job, options=changed)


def _analyse(
    pending: Sequence[tuple[Path, Job]],
    jobs: int | None,
    progress: Progress | None,
    workers: Workers,
) -> list[Outcome]:
    """The outcome of each file, in order, in this process or on the run's `workers`;
    `progress` hears of each file (each chunk of files, from worker processes) as it
    completes, whatever the order."""
    if not pending:
        return []
    from jaxfix.run.runner import process  # imports the engine: only when a file needs analysis

    sizes: list[int] | None = None  # read only when they decide something
    if jobs is not None:
        count = min(jobs, len(pending))
    elif len(pending) > 1:  # workers already started cost no more to use
        sizes = [_size(path) for path, _ in pending]
        count = max(_workers_for(sizes), min(workers.size, len(pending)))
    else:
        count = 1
    if count <= 1:
        results = []
        for path, job in pending:
            results.append(process(path, job))
            if progress is not None:
                progress.done()
        return results
    # Chunks of files in path order: neighbours share imports, so the analysis' caches stay
    # warm (the files themselves largest first took a tenth more CPU time, alternated on the
    # benchmark's corpus). The largest chunks go first, so that no worker is left with one
    # while the others have nothing to do (in a round across modules, a chunk is a file).
    size = max(1, len(pending) // (count * 16))
    sizes = sizes or [_size(path) for path, _ in pending]
    starts = sorted(range(0, len(pending), size), key=lambda n: -sum(sizes[n : n + size]))
    chunks = [pending[start : start + size] for start in starts]
    done = progress.done if progress is not None else None
    analysed = workers.map_chunks(_process_chunk, chunks, count, _died, done)
    by_start = dict(zip(starts, analysed, strict=True))
    return [outcome for start in sorted(by_start) for outcome in by_start[start]]


def _died(task: tuple[Path, Job], how: str) -> Outcome:
    """The outcome of a file whose worker process died under it."""
    path = task[0]
    return Outcome(str(path), error=f"{path}: not analysed: the process analysing it {how}")


def _process_chunk(chunk: Sequence[tuple[Path, Job]]) -> list[Outcome]:
    """Analyse a few files in a worker process (one round trip for them all)."""
    from jaxfix.run.runner import process

    return [process(path, job) for path, job in chunk]
