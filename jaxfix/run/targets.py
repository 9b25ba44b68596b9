"""The files a run analyses, each with the job its configuration gives it."""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from pathlib import Path

from jaxfix.run.config import Config, ConfigFinder, job_for
from jaxfix.run.discovery import DiscoveryError, iter_python_files
from jaxfix.run.job import Job
from jaxfix.run.outcome import Outcome


def targets(
    paths: Sequence[Path], finder: ConfigFinder, *, fix: bool, edits: bool
) -> Iterator[tuple[Path, Job] | Outcome]:
    """Every Python file under `paths` that its configuration does not exclude, with its job,
    and an Outcome for each path that could not be examined. A file named on the command line
    is excluded only under `force-exclude` (as pre-commit passes every staged file)."""
    for given in paths:
        walked = os.path.isdir(given)
        config = finder.for_path(given)
        found = iter_python_files([given], respect_gitignore=config.respect_gitignore)
        for item in found:
            if isinstance(item, DiscoveryError):
                yield Outcome(str(item.path), error=f"{item.path}: {item.message}", examined=False)
                continue
            own = finder.for_file(item)
            if _excluded(own, item, given if walked else None):
                continue
            yield item, job_for(own, item, fix=fix, edits=edits)


def _excluded(config: Config, path: Path, walked_from: Path | None) -> bool:
    if walked_from is None:
        return config.force_exclude and config.excludes(path)
    return config.excludes(path, below=walked_from)
