"""The `jaxfix` command line: `check`, `apply`, `explain`, `rules` and `clean`.

Exit codes: 0 clean, 1 findings remain (or `--diff` would change something), 2 a usage, read,
parse or internal error.
"""

from __future__ import annotations

import gc
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import click

from jaxfix import __version__
from jaxfix.batch import Job, default_jobs, run_paths
from jaxfix.cache import DEFAULT_FOLDER, Cache, clean
from jaxfix.discovery import DiscoveryError, iter_python_files
from jaxfix.outcome import Outcome
from jaxfix.output import Tally, apply_summary, check_summary, finding_line, unified_diff
from jaxfix.sourcefile import SourceError, read_stdin_source, write_source_atomic

# Imported only where needed: the rules and the engine import LibCST (a quarter of a second),
# which a run answered from the cache does without.

STDIN = "-"


def _split(values: Sequence[str]) -> tuple[str, ...]:
    return tuple(part.strip() for value in values for part in value.split(",") if part.strip())


def _validate_selectors(job: Job) -> None:
    from jaxfix.registry import unknown_selectors

    unknown = unknown_selectors(job.select + job.ignore)
    if unknown:
        raise click.UsageError(f"unknown rule selector: {', '.join(unknown)}")


def _outcomes(
    paths: Sequence[str], job: Job, options: RunOptions, stdin_filename: str | None
) -> Iterator[Outcome]:
    """The outcome of every source in PATHS, in order; saves the cache at the end."""
    cache = None if options.no_cache else Cache(options.cache_folder, _cache_settings(job))
    if cache is None or not cache.existed:  # a cache for these selectors proves them valid
        _validate_selectors(job)
    items: list[Path | Outcome] = []
    for raw in paths:
        if raw == STDIN:
            items.append(_stdin_outcome(job, stdin_filename or STDIN))
            continue
        for found in iter_python_files([Path(raw)]):
            if isinstance(found, DiscoveryError):
                items.append(Outcome(str(found.path), error=f"{found.path}: {found.message}"))
            else:
                items.append(found)
    yield from run_paths(items, job, jobs=options.jobs or default_jobs(), cache=cache)
    if cache is not None:
        cache.save()


def _cache_settings(job: Job) -> list[str]:
    return [",".join(sorted(job.select)), ",".join(sorted(job.ignore))]


def _stdin_outcome(job: Job, name: str) -> Outcome:
    from jaxfix.runner import run_job

    try:
        source = read_stdin_source(sys.stdin.buffer.read(), name)
    except SourceError as error:
        return Outcome(name, error=str(error))
    return run_job(source, job, display=name)


@dataclass(frozen=True)
class RunOptions:
    """How a run is carried out (never what it finds)."""

    jobs: int | None
    no_cache: bool
    cache_dir: Path | None

    @property
    def cache_folder(self) -> Path:
        return self.cache_dir or DEFAULT_FOLDER


_jobs = click.option(
    "--jobs",
    "-j",
    type=click.IntRange(min=1),
    default=None,
    help="Worker processes (default: one per core).",
)
_no_cache = click.option(
    "--no-cache", is_flag=True, help="Neither read nor write the result cache."
)
_cache_dir = click.option(
    "--cache-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    envvar="JAXFIX_CACHE_DIR",
    help=f"The result cache folder (default: {DEFAULT_FOLDER}).",
)
_select = click.option(
    "--select", multiple=True, help="Rule codes, code prefixes or names to run (default: all)."
)
_ignore = click.option("--ignore", multiple=True, help="Rule codes, prefixes or names to skip.")
_unsafe = click.option(
    "--unsafe-fixes", is_flag=True, help="Also apply (or count) fixes labelled unsafe."
)
_stdin_name = click.option(
    "--stdin-filename", default=None, help="The name to report for source read from `-`."
)
_paths = click.argument("paths", nargs=-1, required=True)
_exit_zero = click.option(
    "--exit-zero", is_flag=True, help="Exit 0 even when findings remain (2 still means an error)."
)


@click.group()
@click.version_option(__version__, prog_name="jaxfix")
def main() -> None:
    """Find and rewrite JAX code that serializes, caches or leaks traced values."""
    # A syntax tree is millions of long-lived objects: with the default thresholds the collector
    # rescans them over and over, and a large file costs super-linear time (as in mypy).
    gc.set_threshold(100_000, 50, 1000)


@main.command()
@_paths
@_select
@_ignore
@_unsafe
@_stdin_name
@_exit_zero
@_jobs
@_no_cache
@_cache_dir
def check(
    paths: tuple[str, ...],
    select: tuple[str, ...],
    ignore: tuple[str, ...],
    unsafe_fixes: bool,
    stdin_filename: str | None,
    exit_zero: bool,
    jobs: int | None,
    no_cache: bool,
    cache_dir: Path | None,
) -> None:
    """Report findings in PATHS (files, directories, or - for stdin)."""
    job = Job(_split(select), _split(ignore))
    tally = Tally()
    options = RunOptions(jobs, no_cache, cache_dir)
    for outcome in _outcomes(paths, job, options, stdin_filename):
        _report(outcome, tally)
    click.echo(check_summary(tally, unsafe_fixes), err=True)
    sys.exit(2 if tally.errors else 1 if tally.remaining and not exit_zero else 0)


@main.command()
@_paths
@click.option("--diff", is_flag=True, help="Write nothing; print a unified diff of the fixes.")
@_select
@_ignore
@_unsafe
@_stdin_name
@_exit_zero
@click.option("--exit-non-zero-on-fix", is_flag=True, help="Exit 1 when anything was fixed, too.")
@_jobs
@_no_cache
@_cache_dir
def apply(
    paths: tuple[str, ...],
    diff: bool,
    select: tuple[str, ...],
    ignore: tuple[str, ...],
    unsafe_fixes: bool,
    stdin_filename: str | None,
    exit_zero: bool,
    exit_non_zero_on_fix: bool,
    jobs: int | None,
    no_cache: bool,
    cache_dir: Path | None,
) -> None:
    """Rewrite PATHS in place with the available fixes (- rewrites stdin to stdout)."""
    job = Job(_split(select), _split(ignore), fix=True, unsafe_fixes=unsafe_fixes)
    tally = Tally()
    color = sys.stdout.isatty()
    options = RunOptions(jobs, no_cache, cache_dir)
    for outcome in _outcomes(paths, job, options, stdin_filename):
        _report(outcome, tally, show_findings=not diff)
        _emit_fixed(outcome, tally, diff, color)
    click.echo(apply_summary(tally, unsafe_fixes, dry_run=diff), err=True)
    if tally.errors:
        sys.exit(2)
    if diff:
        sys.exit(1 if tally.changed_files and not exit_zero else 0)
    failing = tally.remaining and not exit_zero
    sys.exit(1 if failing or (exit_non_zero_on_fix and tally.changed_files) else 0)


def _report(outcome: Outcome, tally: Tally, show_findings: bool = True) -> None:
    tally.files += 1
    tally.count_remaining(outcome.diagnostics)
    if outcome.error:
        tally.errors += 1
        click.echo(f"error: {outcome.error}", err=True)
    if show_findings:
        for diagnostic in outcome.diagnostics:
            click.echo(finding_line(outcome.display, diagnostic))


def _emit_fixed(outcome: Outcome, tally: Tally, diff: bool, color: bool) -> None:
    """Write (or show) the fixed text of one file; stdin's text always goes to stdout."""
    source = outcome.source
    to_stdout = source is not None and str(source.path) == STDIN and not diff
    if outcome.new_text is None or source is None:
        if to_stdout and source is not None:
            sys.stdout.write(source.text)
        return
    tally.changed_files += 1
    tally.fixed += len(outcome.fixed)
    if diff:
        click.echo(unified_diff(outcome.display, source.text, outcome.new_text, color), nl=False)
    elif to_stdout:
        sys.stdout.write(outcome.new_text)
    else:
        try:
            write_source_atomic(source, outcome.new_text)
        except SourceError as error:
            tally.errors += 1
            tally.changed_files -= 1
            tally.fixed -= len(outcome.fixed)
            click.echo(f"error: {error}", err=True)


@main.command()
@click.argument("code")
def explain(code: str) -> None:
    """Print the documentation of the rule CODE (e.g. JF101 or serialize-in-traced)."""
    from jaxfix.docs import rule_doc
    from jaxfix.registry import find_rule

    rule = find_rule(code)
    if rule is None:
        raise click.UsageError(f"unknown rule: {code} (see `jaxfix rules`)")
    click.echo(rule_doc(rule))


@main.command(name="rules")
def list_rules() -> None:
    """List every rule: code, name, fix safety and fix title."""
    from jaxfix.docs import safety_label
    from jaxfix.registry import all_rules

    for rule in all_rules():
        click.echo(f"{rule.code}  {rule.name:<22} {safety_label(rule):<7} {rule.fix_title}")


@main.command(name="clean")
@_cache_dir
def clean_cache(cache_dir: Path | None) -> None:
    """Remove the result cache folder."""
    folder = cache_dir or DEFAULT_FOLDER
    try:
        removed = clean(folder)
    except OSError as error:
        raise click.ClickException(str(error)) from error
    click.echo(f"removed {folder}" if removed else f"no cache at {folder}", err=True)
