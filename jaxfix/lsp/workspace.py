"""What the other files of the workspace tell an open document.

`jaxfix check` over a project traces across its modules (see `jaxfix.run.batch`): a function that
another file's traced code calls is traced, a decorator that another file defines as a jit
wrapper traces, and so on. The server gets the same findings by running that check over the
workspace's files as saved, through the cache (after an edit, only what it can affect is
analysed again), and keeping the job each file was last analysed with: checked alone with its
job, an open document gets the findings the whole run gives it. The run is repeated, in a
worker thread and one at a time, after a Python file or a configuration is saved.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from jaxfix.run.batch import project_jobs
from jaxfix.run.cache import DEFAULT_FOLDER, Cache
from jaxfix.run.config import ConfigFinder, Overrides
from jaxfix.run.job import Job
from jaxfix.run.targets import targets

CACHE_ENV = "JAXFIX_CACHE_DIR"


def workspace_jobs(roots: Sequence[Path]) -> dict[Path, Job]:
    """The job of every Python file under `roots` after a check of them all (one process: a
    server's threads make forking workers unsafe)."""
    found: dict[Path, Job] = {}
    for root in roots:
        folder = os.environ.get(CACHE_ENV)
        cache = Cache(Path(folder) if folder else root / DEFAULT_FOLDER)
        items = targets([root], ConfigFinder(Overrides()), fix=False, edits=False)
        found.update(project_jobs(items, jobs=1, cache=cache))
        cache.save()
    return found


class Workspace:
    """The jobs of the workspace's files, from the latest run over them."""

    def __init__(self, changed: Callable[[], None], log: Callable[[str], None]) -> None:
        """`changed` is called when a run gives some file another job; `log` hears of a run
        that failed."""
        self.roots: tuple[Path, ...] = ()
        self.jobs: Mapping[Path, Job] = {}
        self._changed = changed
        self._log = log
        self._running: asyncio.Task[None] | None = None
        self._again = False

    def job(self, path: Path) -> Job | None:
        """The job the workspace gives the file at `path` (None outside it, or before the
        first run has ended)."""
        return self.jobs.get(path)

    def refresh(self) -> None:
        """Run over the workspace again (after the run in progress, if any)."""
        if not self.roots:
            return
        if self._running is not None and not self._running.done():
            self._again = True
            return
        self._running = asyncio.ensure_future(self._run())

    async def settled(self) -> None:
        """Once no run is in progress."""
        while self._running is not None and not self._running.done():
            await asyncio.wait([self._running])

    async def _run(self) -> None:
        while True:
            self._again = False
            try:
                jobs = await asyncio.to_thread(workspace_jobs, self.roots)
            except Exception as error:  # a server keeps serving what it has
                self._log(f"the workspace could not be checked: {type(error).__name__}: {error}")
                return
            if jobs != self.jobs:
                self.jobs = jobs
                self._changed()
            if not self._again:
                return
