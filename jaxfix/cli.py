"""The `jaxfix` command line: `check`, `apply`, `explain` and `rules`.

Exit codes: 0 clean, 1 findings remain (or `--diff` would change something), 2 a usage, read,
parse or internal error.
"""

from __future__ import annotations

import gc
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

import click

from jaxfix import __version__
from jaxfix.discovery import DiscoveryError, iter_python_files
from jaxfix.docs import rule_doc, safety_label
from jaxfix.output import Tally, apply_summary, check_summary, finding_line, unified_diff
from jaxfix.registry import all_rules, find_rule, select_rules, unknown_selectors
from jaxfix.rule import Rule
from jaxfix.runner import Outcome, load, run
from jaxfix.sourcefile import SourceError, SourceFile, read_stdin_source, write_source_atomic

STDIN = "-"


def _split(values: Sequence[str]) -> list[str]:
    return [part.strip() for value in values for part in value.split(",") if part.strip()]


def _rules(select: Sequence[str], ignore: Sequence[str]) -> list[type[Rule]]:
    selectors = _split(select) + _split(ignore)
    unknown = unknown_selectors(selectors)
    if unknown:
        raise click.UsageError(f"unknown rule selector: {', '.join(unknown)}")
    return select_rules(_split(select), _split(ignore))


def _sources(paths: Sequence[str], stdin_filename: str | None) -> Iterator[SourceFile | Outcome]:
    """Every source to process, or an Outcome with the error that prevented reading it."""
    for raw in paths:
        if raw == STDIN:
            try:
                yield read_stdin_source(sys.stdin.buffer.read(), stdin_filename or STDIN)
            except SourceError as error:
                yield Outcome(stdin_filename or STDIN, error=str(error))
            continue
        for found in iter_python_files([Path(raw)]):
            if isinstance(found, DiscoveryError):
                yield Outcome(str(found.path), error=f"{found.path}: {found.message}")
            else:
                yield load(found)


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
def check(
    paths: tuple[str, ...],
    select: tuple[str, ...],
    ignore: tuple[str, ...],
    unsafe_fixes: bool,
    stdin_filename: str | None,
) -> None:
    """Report findings in PATHS (files, directories, or - for stdin)."""
    rules = _rules(select, ignore)
    tally = Tally()
    for item in _sources(paths, stdin_filename):
        outcome = item if isinstance(item, Outcome) else run(item, rules, fix=False)
        _report(outcome, tally)
        tally.count_remaining(outcome.diagnostics)
    click.echo(check_summary(tally, unsafe_fixes), err=True)
    sys.exit(2 if tally.errors else 1 if tally.remaining else 0)


@main.command()
@_paths
@click.option("--diff", is_flag=True, help="Write nothing; print a unified diff of the fixes.")
@_select
@_ignore
@_unsafe
@_stdin_name
def apply(
    paths: tuple[str, ...],
    diff: bool,
    select: tuple[str, ...],
    ignore: tuple[str, ...],
    unsafe_fixes: bool,
    stdin_filename: str | None,
) -> None:
    """Rewrite PATHS in place with the available fixes (- rewrites stdin to stdout)."""
    rules = _rules(select, ignore)
    tally = Tally()
    color = sys.stdout.isatty()
    for item in _sources(paths, stdin_filename):
        if isinstance(item, Outcome):
            _report(item, tally)
            continue
        outcome = run(item, rules, fix=True, unsafe_fixes=unsafe_fixes)
        _report(outcome, tally, show_findings=not diff)
        tally.count_remaining(outcome.diagnostics)
        _emit_fixed(item, outcome, tally, diff, color)
    click.echo(apply_summary(tally, unsafe_fixes, dry_run=diff), err=True)
    if diff:
        sys.exit(2 if tally.errors else 1 if tally.changed_files else 0)
    sys.exit(2 if tally.errors else 1 if tally.remaining else 0)


def _report(outcome: Outcome, tally: Tally, show_findings: bool = True) -> None:
    tally.files += 1
    if outcome.error:
        tally.errors += 1
        click.echo(f"error: {outcome.error}", err=True)
    if show_findings:
        for diagnostic in outcome.diagnostics:
            click.echo(finding_line(outcome.display, diagnostic))


def _emit_fixed(
    source: SourceFile, outcome: Outcome, tally: Tally, diff: bool, color: bool
) -> None:
    """Write (or show) the fixed text of one file."""
    if outcome.new_text is None:
        if str(source.path) == STDIN and not diff:
            sys.stdout.write(source.text)
        return
    tally.changed_files += 1
    tally.fixed += len(outcome.fixed)
    if diff:
        click.echo(unified_diff(outcome.display, source.text, outcome.new_text, color), nl=False)
    elif str(source.path) == STDIN:
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
    rule = find_rule(code)
    if rule is None:
        raise click.UsageError(f"unknown rule: {code} (see `jaxfix rules`)")
    click.echo(rule_doc(rule))


@main.command(name="rules")
def list_rules() -> None:
    """List every rule: code, name, fix safety and fix title."""
    for rule in all_rules():
        click.echo(f"{rule.code}  {rule.name:<22} {safety_label(rule):<7} {rule.fix_title}")
