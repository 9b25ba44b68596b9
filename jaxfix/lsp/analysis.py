"""Running jaxfix on one version of an editor's buffer, with the settings of the project's
`pyproject.toml` read afresh each time (so that editing it applies at once).

Checking (what diagnostics show) skips the fixes' edits, which cost a LibCST parse per fix, and
where a hoist makes host code wait; they are computed only when the editor asks for code
actions, for the findings it asks about (a finding whose hoist cannot wait then has no fix).
These functions are CPU-bound and run in worker threads; `PerVersion` computes each once per
document version.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Generic, Protocol, TypeVar

from jaxfix.analysis.project import place_of
from jaxfix.models.diagnostic import Diagnostic, TextEdit
from jaxfix.models.edits import EditsWanted
from jaxfix.run.config import Config, ConfigError, ConfigFinder, Overrides, job_for, validate
from jaxfix.run.job import Job
from jaxfix.run.outcome import Outcome
from jaxfix.run.runner import run_job
from jaxfix.run.sourcefile import SourceFile

T = TypeVar("T")


@dataclass(frozen=True)
class Snapshot:
    """One version of a document, under one generation of the project's settings."""

    uri: str
    version: int | None
    text: str
    path: Path
    generation: int = 0  # bumped when a pyproject.toml changes
    # What the workspace's other files tell this one (`jaxfix.lsp.workspace`), if known.
    project: Job | None = None


@dataclass(frozen=True)
class Analysis:
    """What checking a snapshot found."""

    diagnostics: tuple[Diagnostic, ...] = ()
    error: str | None = None  # the text cannot be analysed (a syntax error) or a rule crashed
    config_error: str | None = None  # the pyproject.toml is unusable: the defaults applied

    @property
    def crashed(self) -> bool:
        """Whether jaxfix itself failed (rather than the text being invalid)."""
        return self.error is not None and "internal error" in self.error


def check(snapshot: Snapshot) -> Analysis:
    """The findings of the snapshot's text, without their edits (nor the scan that places
    the waits of a hoist: `Options.plan_waits`)."""
    job, config_error = _job(snapshot, fix=False, edits=False)
    options = dataclasses.replace(job.options, plan_waits=False)
    outcome = _run(snapshot, dataclasses.replace(job, options=options))
    return Analysis(_findings(outcome), outcome.error, config_error)


def _findings(outcome: Outcome) -> tuple[Diagnostic, ...]:
    """The outcome's findings: not what other files' fixes change in it (their parts)."""
    return tuple(d for d in outcome.diagnostics if not d.part_of)


@dataclass(frozen=True)
class FixRequest:
    """The fixes of the findings that start on `lines` of a snapshot."""

    snapshot: Snapshot
    lines: frozenset[int]

    @property
    def uri(self) -> str:
        return self.snapshot.uri


def with_edits(request: FixRequest) -> tuple[Diagnostic, ...]:
    """The findings that start on the lines the request names, with their fixes' edits; none
    when the text cannot be analysed (never a fix computed for another text)."""
    job, _ = _job(request.snapshot, fix=False, edits=request.lines)
    outcome = _run(request.snapshot, job)
    return () if outcome.error else _findings(outcome)


@dataclass(frozen=True)
class Elsewhere:
    """What a fix changes in another file of the workspace: its text as the edits read it."""

    path: Path
    text: str
    edits: tuple[TextEdit, ...]


def parts_elsewhere(
    found: Diagnostic,
    snapshot: Snapshot,
    jobs: Mapping[Path, Job],
    texts: Mapping[Path, str],
) -> tuple[Elsewhere, ...] | None:
    """What `found`'s fix changes in the workspace's other files (`Diagnostic.moves`): the
    parts that the files told of its function take, each analysed with the job the workspace
    gives it (its open text in `texts`, else the saved one), and the parts of the fixes those
    parts make in turn (a helper's call moved into a callback in its caller's file, whose
    readers wait for it); None when one of them cannot be analysed (then the fix is not
    offered: never half of it)."""
    if not found.moves:
        return ()
    edits: dict[Path, tuple[str, list[TextEdit]]] = {}
    todo = [f"{place_of(snapshot.path).module}:{found.moves}"]
    seen: set[str] = set()
    while todo:
        fix = todo.pop()
        if fix in seen:
            continue
        seen.add(fix)
        for path, job in _told_of(fix, snapshot.path, jobs):
            try:
                text = texts[path] if path in texts else path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                return None
            source = SourceFile(path, text.encode("utf-8", "surrogatepass"), text, "utf-8")
            outcome = run_job(source, dataclasses.replace(job, fix=False, edits=True))
            if outcome.error:
                return None
            for part in (d for d in outcome.diagnostics if d.part_of == fix):
                edits.setdefault(path, (text, []))[1].extend(part.edits)
                if part.moves:
                    todo.append(f"{place_of(path).module}:{part.moves}")
    # A file told of the function may take no part (it reads nothing after).
    return tuple(Elsewhere(path, text, tuple(e)) for path, (text, e) in edits.items() if e)


def _told_of(fix: str, own: Path, jobs: Mapping[Path, Job]) -> list[tuple[Path, Job]]:
    """The other files told of the function of `fix`, or of one that runs it
    (`ReturnChange.transaction`)."""
    return [
        (path, job)
        for path, job in sorted(jobs.items())
        if path != own
        and any(
            c.allowed and c.returned.transaction(c.definer) == fix
            for c in job.options.changed_imports
        )
    ]


def fixed_text(snapshot: Snapshot) -> str | None:
    """The snapshot's text with every safe fix applied, or None when nothing changes (or a
    fix fails: then nothing is applied)."""
    job, _ = _job(snapshot, fix=True, edits=False)
    outcome = _run(snapshot, dataclasses.replace(job, unsafe_fixes=False))
    return None if outcome.error else outcome.new_text


def _run(snapshot: Snapshot, job: Job) -> Outcome:
    """The outcome of `job` on the snapshot's text (without a place in the workspace: what
    the document tells the other files is the workspace run's to find, from the saved file)."""
    raw = snapshot.text.encode("utf-8", "surrogatepass")
    return run_job(SourceFile(snapshot.path, raw, snapshot.text, "utf-8"), job)


def _job(snapshot: Snapshot, *, fix: bool, edits: EditsWanted) -> tuple[Job, str | None]:
    """The job the workspace gives the snapshot's file, or else the nearest `pyproject.toml`;
    the defaults and the problem when that file is unusable."""
    path = snapshot.path
    finder = ConfigFinder(Overrides())
    try:
        config = finder.for_path(path)
        validate(finder.loaded())
    except ConfigError as error:
        return job_for(Config(), path, fix=fix, edits=edits), str(error)
    if snapshot.project is not None:
        return dataclasses.replace(snapshot.project, fix=fix, edits=edits), None
    return job_for(config, path, fix=fix, edits=edits), None


class _OfDocument(Protocol):
    """What a computation is asked for: a snapshot, or a snapshot and more (hashable)."""

    @property
    def uri(self) -> str: ...


K = TypeVar("K", bound=_OfDocument)


class PerVersion(Generic[K, T]):
    """`compute` of the latest request of each document (a snapshot, or a snapshot and more),
    run once in a worker thread and shared by every request equal to it."""

    def __init__(self, compute: Callable[[K], T]) -> None:
        self._compute = compute
        self._latest: dict[str, tuple[K, asyncio.Future[T]]] = {}

    async def get(self, request: K) -> T:
        entry = self._latest.get(request.uri)
        if entry is None or entry[0] != request:
            future = asyncio.ensure_future(asyncio.to_thread(self._compute, request))
            entry = self._latest[request.uri] = (request, future)
        # A cancelled request must not cancel the computation other requests share.
        return await asyncio.shield(entry[1])

    async def settled(self, uri: str) -> None:
        """Once no computation for the document is running (what it computes is not awaited:
        its errors are the requests' to report)."""
        entry = self._latest.get(uri)
        if entry is not None and not entry[1].done():
            await asyncio.wait([entry[1]])

    def forget(self, uri: str) -> None:
        self._latest.pop(uri, None)
