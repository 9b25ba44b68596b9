"""Running jaxfix on one version of an editor's buffer, with the settings of the project's
`pyproject.toml` read afresh each time (so that editing it applies at once).

Checking (what diagnostics show) skips the fixes' edits, which cost a LibCST parse per fix;
they are computed only when the editor asks for code actions, for the findings it asks about.
These functions are CPU-bound and run in worker threads; `PerVersion` computes each once per
document version.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Generic, Protocol, TypeVar

from jaxfix.batch import Job
from jaxfix.config import Config, ConfigError, ConfigFinder, Overrides, job_for, validate
from jaxfix.diagnostic import Diagnostic
from jaxfix.edits import EditsWanted
from jaxfix.runner import run_job
from jaxfix.sourcefile import SourceFile

T = TypeVar("T")


@dataclass(frozen=True)
class Snapshot:
    """One version of a document, under one generation of the project's settings."""

    uri: str
    version: int | None
    text: str
    path: Path
    generation: int = 0  # bumped when a pyproject.toml changes


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
    """The findings of the snapshot's text, without their edits."""
    job, config_error = _job(snapshot.path, fix=False, edits=False)
    outcome = run_job(_source(snapshot), job)
    return Analysis(tuple(outcome.diagnostics), outcome.error, config_error)


@dataclass(frozen=True)
class FixRequest:
    """The fixes of the findings that start on `lines` of a snapshot."""

    snapshot: Snapshot
    lines: frozenset[int]

    @property
    def uri(self) -> str:
        return self.snapshot.uri


def with_edits(request: FixRequest) -> tuple[Diagnostic, ...]:
    """The findings of the snapshot's text, the fixes of those the request names with their
    edits; none when the text cannot be analysed (never a fix computed for another text)."""
    job, _ = _job(request.snapshot.path, fix=False, edits=request.lines)
    outcome = run_job(_source(request.snapshot), job)
    return () if outcome.error else tuple(outcome.diagnostics)


def fixed_text(snapshot: Snapshot) -> str | None:
    """The snapshot's text with every safe fix applied, or None when nothing changes (or a
    fix fails: then nothing is applied)."""
    job, _ = _job(snapshot.path, fix=True, edits=False)
    outcome = run_job(_source(snapshot), dataclasses.replace(job, unsafe_fixes=False))
    return None if outcome.error else outcome.new_text


def _source(snapshot: Snapshot) -> SourceFile:
    raw = snapshot.text.encode("utf-8", "surrogatepass")
    return SourceFile(snapshot.path, raw, snapshot.text, "utf-8")


def _job(path: Path, *, fix: bool, edits: EditsWanted) -> tuple[Job, str | None]:
    """The job the nearest `pyproject.toml` gives `path`; the defaults and the problem when
    that file is unusable."""
    finder = ConfigFinder(Overrides())
    try:
        config = finder.for_path(path)
        validate(finder.loaded())
    except ConfigError as error:
        return job_for(Config(), path, fix=fix, edits=edits), str(error)
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
