"""One run of `check` or `apply`: the files the paths and the configuration give, analysed
(in parallel, through the cache) into outcomes, in the order of the paths."""

from __future__ import annotations

import dataclasses
import os
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import click

from jaxfix.report.terminal import echo, progress_bar
from jaxfix.rules.registry import suggestion, unknown_selectors
from jaxfix.run.batch import run_paths
from jaxfix.run.cache import DEFAULT_FOLDER, Cache
from jaxfix.run.config import (
    ConfigError,
    ConfigFinder,
    Overrides,
    job_for,
    opt_in_notes,
    project_root,
    validate,
)
from jaxfix.run.job import Job
from jaxfix.run.outcome import Outcome
from jaxfix.run.sourcefile import SourceError, read_stdin_source
from jaxfix.run.targets import targets

# Imported only where needed: the rules and the engine import LibCST (a quarter of a second),
# which a run answered from the cache does without.

STDIN = "-"


@dataclass(frozen=True)
class RunOptions:
    """How a run is carried out (never what it finds)."""

    jobs: int | None
    no_cache: bool
    cache_dir: Path | None
    config: Path | None
    isolated: bool
    stdin_filename: str | None
    # Read the project's other Python files too, reporting only the paths' (`--project-context`).
    project_context: bool = False

    @property
    def cache_folder(self) -> Path:
        """`--cache-dir`, else `.jaxfix_cache` at the project's root (`project_root`)."""
        return self.cache_dir or project_root(self.config, self.isolated) / DEFAULT_FOLDER


class BadConfig(click.ClickException):
    """A configuration file that cannot be used: `Error: <file>: <problem>`, exit 2."""

    exit_code = 2


def finder_for(overrides: Overrides, options: RunOptions) -> ConfigFinder:
    """Where each file's settings come from; the command line's selectors checked first."""
    _validate_overrides(overrides)
    return ConfigFinder(overrides, forced=options.config, isolated=options.isolated)


def outcomes(
    paths: Sequence[str], finder: ConfigFinder, options: RunOptions, *, fix: bool, edits: bool
) -> Iterator[Outcome]:
    """The outcome of every source in PATHS, in order; saves the cache at the end."""
    cache = None if options.no_cache else Cache(options.cache_folder)
    items: list[tuple[Path, Job] | Outcome] = []
    try:
        for raw in paths:
            if raw == STDIN:
                items.append(_stdin_outcome(finder, options.stdin_filename, fix=fix, edits=edits))
            else:
                items.extend(targets([Path(raw)], finder, fix=fix, edits=edits))
        reported = len(items)
        if options.project_context:
            items.extend(_context(items, finder, options, fix=fix, edits=edits))
        notes = _validate_configs(finder, cache)
    except ConfigError as error:
        raise BadConfig(str(error)) from error
    for note in notes:
        echo(f"warning: {note}", err=True)
    files = sum(1 for item in items if not isinstance(item, Outcome))
    with progress_bar(files, "Applying" if fix else "Checking") as bar:
        done = run_paths(items, jobs=options.jobs, cache=cache, progress=bar)
        for index, outcome in enumerate(done):
            if index < reported:
                item = items[index]
                if not isinstance(item, Outcome):
                    outcome.unsafe_fixes = item[1].unsafe_fixes
                yield outcome
            elif outcome.new_text is not None or outcome.parts:
                yield _as_context(outcome)
    if cache is not None:
        cache.save()


def _context(
    items: Sequence[tuple[Path, Job] | Outcome],
    finder: ConfigFinder,
    options: RunOptions,
    *,
    fix: bool,
    edits: bool,
) -> Iterator[tuple[Path, Job]]:
    """The project's Python files that `items` do not name (walked from the project's root as
    a folder given on the command line is: excludes and `.gitignore` apply), each with a job
    that makes only the parts of the reported files' fixes in it (`Options.own_fixes`).

    pre-commit passes only the staged files: a staged helper is traced because of its callers'
    traced code in the other modules, and a fix over several files changes those files too."""
    given = {os.path.realpath(item[0]) for item in items if not isinstance(item, Outcome)}
    root = Path(os.path.relpath(project_root(options.config, options.isolated)))
    for item in targets([root], finder, fix=fix, edits=edits):
        if isinstance(item, Outcome):  # an unreadable folder: no finding of the paths'
            continue
        path, job = item
        if os.path.realpath(path) in given:
            continue
        if fix:
            job = dataclasses.replace(
                job, options=dataclasses.replace(job.options, own_fixes=False)
            )
        yield path, job


def _as_context(outcome: Outcome) -> Outcome:
    """A context file's outcome: only what other files' fixes change in it."""
    return Outcome(
        outcome.display,
        outcome.source,
        parts=outcome.parts,
        new_text=outcome.new_text,
        digest=outcome.digest,
        context=True,
    )


def _validate_overrides(overrides: Overrides) -> None:
    """A usage error naming the option and the selector that names no rule."""
    given = {
        "--select": overrides.select or (),
        "--extend-select": overrides.extend_select,
        "--ignore": overrides.ignore,
    }
    if not any(given.values()):
        return
    for option, selectors in given.items():
        for selector in unknown_selectors(selectors):
            hint = suggestion(selector)
            close = f" (did you mean `{hint}`?)" if hint else ""
            raise click.BadParameter(f"unknown rule `{selector}`{close}", param_hint=option)


def _validate_configs(finder: ConfigFinder, cache: Cache | None) -> list[str]:
    """Check the configuration files' rule selectors and options, and return the warnings
    about the selection, unless an earlier run with the same settings did it."""
    configs, used = finder.loaded(), finder.used()
    if not configs and not any(c.select or c.extend_select for c in used):
        return []
    key = repr(used)
    if cache is not None and cache.is_valid(key):
        return cache.notes(key)
    validate(configs)
    notes = opt_in_notes(used)
    if cache is not None:
        cache.mark_valid(key, notes)
    return notes


def _stdin_outcome(finder: ConfigFinder, name: str | None, *, fix: bool, edits: bool) -> Outcome:
    from jaxfix.run.runner import run_job

    display = name or STDIN
    config = finder.for_path(Path(name) if name else Path.cwd())
    job = job_for(config, Path(display), fix=fix, edits=edits)
    try:
        source = read_stdin_source(sys.stdin.buffer.read(), display)
    except SourceError as error:
        return Outcome(display, error=str(error), stdin=True)
    outcome = run_job(source, job, display=display)
    outcome.stdin = True
    outcome.unsafe_fixes = job.unsafe_fixes
    return outcome
