"""The `jaxfix` command line: `check`, `apply`, `explain`, `rules`, `sinks`, `verify`, `lsp` and
`clean`.

Exit codes: 0 clean, 1 findings remain (or `--diff` would change something), 2 a usage, read,
parse or internal error.
"""

from __future__ import annotations

import dataclasses
import gc
import json
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import click

try:
    import termios
except ImportError:  # Windows: answers are lines
    termios = None  # type: ignore[assignment]

from jaxfix import __version__

# Imported where a command needs them, not at every start: the rules' docs and LibCST
# (`report.docs`), the analysis (`run.runner`, the proofs), pygls (`lsp.server`), and the few
# milliseconds of `add_ignore`, `interactive` and the NumPy table that a check does without.
from jaxfix.models.cells import CellMap
from jaxfix.models.diagnostic import Diagnostic, TextEdit
from jaxfix.models.edits import apply_edits
from jaxfix.models.sinks import Sink, SinkKind
from jaxfix.report.formats import FORMATS, STREAMING_FORMATS, FileResult, render
from jaxfix.report.formats import statistics as render_statistics
from jaxfix.report.output import (
    Tally,
    add_ignore_summary,
    apply_summary,
    check_summary,
    finding_line,
    lines_before,
    unified_diff,
)
from jaxfix.report.terminal import echo, wants_color
from jaxfix.rules.registry import all_rules, find_rule, select_rules, sink_table
from jaxfix.rules.suppression import UNUSED_CODE
from jaxfix.run.cache import DEFAULT_FOLDER, clean
from jaxfix.run.config import ConfigError, ConfigFinder, Overrides, job_for, project_root, validate
from jaxfix.run.job import Job
from jaxfix.run.notebook import NOTEBOOK_SUFFIX
from jaxfix.run.outcome import Outcome
from jaxfix.run.session import STDIN, BadConfig, RunOptions, finder_for, outcomes
from jaxfix.run.sourcefile import (
    SourceError,
    SourceFile,
    read_source,
    write_source_atomic,
)

# The rules and the engine are imported only where needed: they import LibCST (a quarter of a
# second), which a run answered from the cache does without.

# Outputs that show each fix's edits (computed only for them: it costs a parse per fix).
FORMATS_WITH_EDITS = frozenset({"full", "json", "sarif"})


def _split(values: Sequence[str]) -> tuple[str, ...]:
    return tuple(part.strip() for value in values for part in value.split(",") if part.strip())


def _overrides(values: dict[str, Any]) -> Overrides:
    """The command line's settings, which win over the configuration files'."""
    select = _split(values.pop("select"))
    exclude = _split(values.pop("exclude"))
    return Overrides(
        select=select or None,
        extend_select=_split(values.pop("extend_select")),
        ignore=_split(values.pop("ignore")),
        unsafe_fixes=values.pop("unsafe_fixes"),
        exclude=exclude or None,
        extend_exclude=_split(values.pop("extend_exclude")),
        force_exclude=values.pop("force_exclude"),
        respect_gitignore=values.pop("respect_gitignore"),
    )


def _run_options(values: dict[str, Any]) -> RunOptions:
    return RunOptions(
        jobs=values.pop("jobs"),
        no_cache=values.pop("no_cache"),
        cache_dir=values.pop("cache_dir"),
        config=values.pop("config"),
        isolated=values.pop("isolated"),
        stdin_filename=values.pop("stdin_filename"),
        project_context=values.pop("project_context"),
    )


def _common(command: Callable[..., None]) -> Callable[..., None]:
    """The options `check` and `apply` share, in the order `--help` lists them."""
    decorators = [
        click.option(
            "--select",
            multiple=True,
            help="Rule codes, prefixes, names or ALL to run (default: every rule but the opt-in"
            " ones, which run only when named by code or name).",
        ),
        click.option("--extend-select", multiple=True, help="Rules to run besides `select`."),
        click.option("--ignore", multiple=True, help="Rule codes, prefixes or names to skip."),
        click.option(
            "--unsafe-fixes/--no-unsafe-fixes",
            default=None,
            help="Also apply (or count) fixes labelled unsafe.",
        ),
        click.option(
            "--config",
            type=click.Path(exists=True, dir_okay=False, path_type=Path),
            help="Use this pyproject.toml for every file (default: the nearest one).",
        ),
        click.option("--isolated", is_flag=True, help="Ignore every configuration file."),
        click.option("--exclude", multiple=True, help="Patterns to skip (replaces `exclude`)."),
        click.option("--extend-exclude", multiple=True, help="Patterns to skip besides those."),
        click.option(
            "--force-exclude/--no-force-exclude",
            default=None,
            help="Apply the excludes to files named on the command line too (for pre-commit).",
        ),
        click.option(
            "--respect-gitignore/--no-respect-gitignore",
            default=None,
            help="Skip what .gitignore files ignore (default: yes).",
        ),
        click.option("--stdin-filename", help="The name to report for source read from `-`."),
        click.option(
            "--project-context",
            is_flag=True,
            help="Also read the project's other Python files, reporting only PATHS (for"
            " pre-commit: a staged helper is traced from its unstaged callers).",
        ),
        click.option(
            "--exit-zero",
            is_flag=True,
            help="Exit 0 even when findings remain (2 still means an error).",
        ),
        click.option(
            "--jobs",
            "-j",
            type=click.IntRange(min=1),
            help="Worker processes (default: one per core, fewer for a small run).",
        ),
        click.option("--no-cache", is_flag=True, help="Neither read nor write the result cache."),
        _cache_dir,
    ]
    for decorator in reversed(decorators):
        command = decorator(command)
    return command


_cache_dir = click.option(
    "--cache-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    envvar="JAXFIX_CACHE_DIR",
    help=f"The result cache folder (default: {DEFAULT_FOLDER} at the project's root).",
)


# `-h` as well as `--help`, on the group and (inherited through the context) every command.
CONTEXT = {"help_option_names": ["-h", "--help"]}


@click.group(context_settings=CONTEXT)
@click.version_option(__version__, prog_name="jaxfix")
def main() -> None:
    """Find and rewrite JAX code that serializes, caches or leaks traced values."""
    # A syntax tree is millions of long-lived objects: with the default thresholds the collector
    # rescans them over and over, and a large file costs super-linear time (as in mypy).
    gc.set_threshold(100_000, 50, 1000)


ADD_IGNORE = "--add-ignore"


class _CheckCommand(click.Command):
    """`check`, whose `--add-ignore` takes its reason only as `--add-ignore=REASON`: a bare
    `--add-ignore` never swallows the path after it."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        end = args.index("--") if "--" in args else len(args)
        if "--fix" in args[:end]:  # Ruff's `check --fix` is `jaxfix apply`
            unsafe = " --unsafe-fixes" if "--unsafe-fixes" in args[:end] else ""
            raise click.UsageError(
                f"`check` does not fix: run `jaxfix apply{unsafe} PATH...` to apply the fixes",
                ctx,
            )
        args = [ADD_IGNORE + "=" if arg == ADD_IGNORE else arg for arg in args[:end]] + args[end:]
        return super().parse_args(ctx, args)


@main.command(
    cls=_CheckCommand, short_help="Report findings in PATHS (default: the current folder)."
)
@click.argument("paths", nargs=-1)
@_common
@click.option(
    "--output-format",
    type=click.Choice(FORMATS),
    default="text",
    show_default=True,
    help="How findings are printed.",
)
@click.option("--show-fixes", is_flag=True, help="Show the diff of each fixable finding.")
@click.option("--statistics", is_flag=True, help="Print a count per rule instead of findings.")
@click.option(
    "--output-file",
    "-o",
    type=click.Path(dir_okay=False, writable=True, path_type=Path),
    help="Write the findings to this file instead of stdout.",
)
@click.option("--quiet", "-q", is_flag=True, help="Print the findings only: no summary line.")
@click.option(
    ADD_IGNORE,
    default=None,
    metavar="[=REASON]",
    help="Insert a `# jaxfix: ignore[...]` comment (with `-- REASON`) for every finding.",
)
def check(paths: tuple[str, ...], **values: Any) -> None:
    """Report findings in PATHS (files, directories, or - for stdin; default: the current
    folder, as Ruff does)."""
    paths = paths or (".",)
    fmt, show_fixes, statistics = (
        values.pop("output_format"),
        values.pop("show_fixes"),
        values.pop("statistics"),
    )
    add_ignore: str | None = values.pop("add_ignore")
    exit_zero = values.pop("exit_zero")
    output_file: Path | None = values.pop("output_file")
    quiet = values.pop("quiet")
    overrides, options = _overrides(values), _run_options(values)
    if add_ignore is not None:
        sys.exit(_add_ignores(paths, overrides, options, add_ignore or None, quiet))
    edits = fmt in FORMATS_WITH_EDITS or show_fixes
    color = output_file is None and wants_color(sys.stdout)
    tally = Tally()
    results: list[FileResult] = []
    streaming = fmt in STREAMING_FORMATS and not statistics and output_file is None
    for outcome in outcomes(paths, finder_for(overrides, options), options, fix=False, edits=edits):
        if outcome.context:
            continue
        _count(outcome, tally)
        result = _file_result(outcome, with_text=fmt == "full" or show_fixes)
        if streaming:
            if outcome.diagnostics:
                echo(render(fmt, [result], color=color, show_fixes=show_fixes), nl=False)
        else:
            results.append(result)
    if statistics:
        _output(render_statistics(results, color=color), output_file)
    elif not streaming:
        _output(render(fmt, results, color=color, show_fixes=show_fixes), output_file)
    if not quiet:
        _summary(check_summary(tally, overrides.unsafe_fixes or False), tally)
    sys.exit(2 if tally.errors else 1 if tally.remaining and not exit_zero else 0)


@main.command(short_help="Rewrite files in place with the available fixes.")
@click.argument("paths", nargs=-1, required=True)
@_common
@click.option("--diff", is_flag=True, help="Write nothing; print a unified diff of the fixes.")
@click.option(
    "--interactive", "-i", is_flag=True, help="Ask before each fix (y/n/a/d/q), showing its diff."
)
@click.option("--exit-non-zero-on-fix", is_flag=True, help="Exit 1 when anything was fixed, too.")
def apply(paths: tuple[str, ...], **values: Any) -> None:
    """Rewrite PATHS in place with the available fixes (- rewrites stdin to stdout)."""
    diff, interactive = values.pop("diff"), values.pop("interactive")
    exit_zero, on_fix = values.pop("exit_zero"), values.pop("exit_non_zero_on_fix")
    overrides, options = _overrides(values), _run_options(values)
    if interactive and (diff or STDIN in paths):
        raise click.UsageError("--interactive needs files to rewrite (not --diff, not -)")
    tally = Tally()
    color = wants_color(sys.stdout)
    if interactive:
        _review_all(paths, overrides, options, tally, color)
    else:
        for outcome in outcomes(
            paths, finder_for(overrides, options), options, fix=True, edits=False
        ):
            _count(outcome, tally)
            if outcome.diagnostics:  # what remains, as `check` prints it; on stderr beside a
                # diff, which stays a patch
                result = _file_result(outcome, with_text=False)
                if diff and outcome.new_text is not None and outcome.source is not None:
                    result = dataclasses.replace(
                        result,
                        diagnostics=lines_before(
                            outcome.source.text, outcome.new_text, outcome.diagnostics
                        ),
                    )
                shown = render("text", [result], color=color, show_fixes=False)
                echo(shown, nl=False, err=diff)
            _emit_fixed(outcome, tally, diff, color)
    _summary(apply_summary(tally, overrides.unsafe_fixes or False, dry_run=diff), tally)
    if tally.errors:
        sys.exit(2)
    if diff:
        sys.exit(1 if tally.changed_files and not exit_zero else 0)
    failing = tally.remaining and not exit_zero
    sys.exit(1 if failing or (on_fix and tally.changed_files) else 0)


def _output(text: str, path: Path | None) -> None:
    """`check`'s findings, to stdout or to the `--output-file`."""
    if path is None:
        click.echo(text, nl=False)
        return
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as error:
        raise click.FileError(str(path), error.strerror or str(error)) from error


def _summary(text: str, tally: Tally) -> None:
    """The summary line on stderr: red when something is left or failed, green when clean."""
    if wants_color(sys.stderr):
        text = click.style(
            text, fg="red" if tally.remaining or tally.errors else "green", bold=True
        )
    click.echo(text, err=True, color=wants_color(sys.stderr))


def _count(outcome: Outcome, tally: Tally) -> None:
    if outcome.context:  # read for context only: written if a fix changes it, never counted
        return
    tally.files += outcome.examined
    tally.count_remaining(outcome.diagnostics, outcome.unsafe_fixes)
    if outcome.error:
        _error(tally, outcome.error)


def _error(tally: Tally, message: str) -> None:
    """Report one file's problem on stderr and count it (the run goes on)."""
    tally.errors += 1
    echo(f"error: {message}", err=True)


def _file_result(outcome: Outcome, with_text: bool) -> FileResult:
    text = None
    if with_text and outcome.diagnostics:
        text = outcome.source.text if outcome.source else _read_text(outcome.display)
    return FileResult(
        outcome.display,
        text,
        outcome.diagnostics,
        outcome.error,
        _cells_of(outcome),
        outcome.unsafe_fixes,
    )


def _cells_of(outcome: Outcome) -> CellMap | None:
    """A notebook's cells, which its findings' positions name; None for any other file."""
    if not outcome.diagnostics or not outcome.display.endswith(NOTEBOOK_SUFFIX):
        return None
    source = outcome.source
    if source is None:
        try:
            source = read_source(Path(outcome.display))
        except SourceError:
            return None
    return source.notebook.cell_map if source.notebook is not None else None


def _diff(display: str, source: SourceFile, new_text: str, color: bool) -> str:
    """The unified diff of a file's fixes; a notebook's, cell by cell (`a/nb.ipynb:cell 2`)."""
    if source.notebook is None:
        return unified_diff(display, source.text, new_text, color)
    before = source.notebook.cell_sources(source.text)
    after = source.notebook.cell_sources(new_text)
    return "".join(
        unified_diff(f"{display}:cell {number}", _ended(old), _ended(new), color)
        for (number, old), (_, new) in zip(before, after, strict=True)
        if old != new
    )


def _ended(text: str) -> str:
    """A cell's source with a last newline (which cells usually lack), for a diff."""
    return text if not text or text.endswith("\n") else text + "\n"


def _read_text(path: str) -> str | None:
    try:
        return read_source(Path(path)).text
    except SourceError:
        return None


def _add_ignores(
    paths: Sequence[str],
    overrides: Overrides,
    options: RunOptions,
    reason: str | None,
    quiet: bool = False,
) -> int:
    """`check --add-ignore`: a suppression comment for every finding; the exit code."""
    from jaxfix.run.add_ignore import add_suppressions

    if STDIN in paths:
        raise click.UsageError("--add-ignore needs files to rewrite (not -)")
    try:
        add_suppressions("", [], reason)  # validates the reason before any file is touched
    except ValueError as error:
        raise click.BadParameter(str(error), param_hint="--add-ignore") from error
    tally = Tally()
    added = 0
    found = outcomes(paths, finder_for(overrides, options), options, fix=False, edits=False)
    for outcome in found:
        _count(outcome, tally)
        if outcome.error or not outcome.diagnostics:
            continue
        try:
            source = read_source(Path(outcome.display))
            text, skipped = add_suppressions(source.text, outcome.diagnostics, reason)
            if text != source.text:
                write_source_atomic(source, text)
        except (SourceError, ValueError) as error:
            _error(tally, str(error))
            continue
        for diagnostic in skipped:
            echo(f"{finding_line(outcome.display, diagnostic)} (no place for a comment)")
        suppressed = sum(d.code != UNUSED_CODE for d in outcome.diagnostics) - len(skipped)
        added += suppressed
        tally.remaining -= suppressed
        tally.changed_files += text != source.text
    if not quiet:
        click.echo(add_ignore_summary(tally, added), err=True)
    return 2 if tally.errors else 1 if tally.remaining else 0


def _review_all(
    paths: Sequence[str], overrides: Overrides, options: RunOptions, tally: Tally, color: bool
) -> None:
    """`apply --interactive`: analyse every file (in parallel), then ask about each fix in turn
    and write each file once its questions are answered."""
    from jaxfix.report.interactive import review_file
    from jaxfix.run.runner import run_job

    finder = finder_for(overrides, options)
    stopped = False
    found = list(outcomes(paths, finder, options, fix=False, edits=True))
    parts = _Parts(found, color)
    # What remains of each file once reviewed, listed at the end as `apply` lists it.
    left = {o.display: o for o in found if o.diagnostics and not (o.error or o.context)}
    # A file whose fixes change other files comes before them: their review starts from the
    # text with the changes accepted so far.
    for outcome in sorted(found, key=lambda o: not any(d.moves for d in o.diagnostics)):
        _count(outcome, tally)
        if stopped or outcome.error or outcome.context:  # a context file: only parts, below
            continue
        pending = parts.pending.pop(outcome.display, None)
        if pending is None and not any(d.edits for d in outcome.diagnostics):
            continue
        try:
            source = read_source(Path(outcome.display))
        except SourceError as error:
            _error(tally, str(error))
            continue
        original = source
        first: list[Diagnostic] | None = outcome.diagnostics
        if pending is not None:  # the parts of other files' fixes, applied
            source = dataclasses.replace(source, text=apply_edits(source.text, pending))
            first = None
        job = job_for(finder.for_path(source.path), source.path, fix=False, edits=True)

        def check(text: str, source: SourceFile = source, job: Job = job) -> list[Diagnostic]:
            checked = run_job(dataclasses.replace(source, text=text), job)
            if checked.error:
                raise _ReviewFailed(checked.error)
            return checked.diagnostics

        try:
            review = review_file(
                outcome.display,
                source.text,
                check,
                ask=_ask,
                say=click.echo,
                unsafe_fixes=job.unsafe_fixes,
                color=color,
                first=first,
                elsewhere=parts.diff,
            )
        except _ReviewFailed as error:
            _error(tally, f"{error}; the file is left unchanged")
            continue
        tally.remaining += len(review.remaining) - len(outcome.diagnostics)
        left[outcome.display] = dataclasses.replace(outcome, diagnostics=review.remaining)
        parts.accept(review.applied)
        if review.applied or pending is not None:
            reviewed = dataclasses.replace(outcome, source=original, new_text=review.text)
            reviewed.fixed = review.applied
            _emit_fixed(reviewed, tally, diff=False, color=color)
        stopped = review.quit
    for outcome in found:  # files that only take parts of fixes accepted elsewhere
        pending = parts.pending.pop(outcome.display, None)
        if pending is not None:
            source = read_source(Path(outcome.display))
            changed = dataclasses.replace(
                outcome, source=source, new_text=apply_edits(source.text, pending), fixed=[]
            )
            _emit_fixed(changed, tally, diff=False, color=color)
    remaining = [_file_result(o, with_text=False) for _, o in sorted(left.items()) if o.diagnostics]
    if remaining:
        echo(render("text", remaining, color=color, show_fixes=False), nl=False)


class _Parts:
    """The changes that fixes over several files make in the other files (their parts, by
    the finding they belong to: `Diagnostic.moves`), and those of the fixes accepted so far,
    by file: applied whole, with the finding, or not at all."""

    def __init__(self, found: Sequence[Outcome], color: bool) -> None:
        self.color = color
        self.by_fix: dict[str, list[tuple[str, Diagnostic]]] = {}
        for outcome in found:
            for part in outcome.parts:
                self.by_fix.setdefault(part.part_of, []).append((outcome.display, part))
        self.pending: dict[str, list[TextEdit]] = {}
        self._accepted: set[str] = set()

    def diff(self, diagnostic: Diagnostic) -> str:
        """The diff of what `diagnostic`'s fix changes in the other files ("" for none)."""
        edits = self._edits(diagnostic)
        diffs = []
        for display, changes in edits.items():
            before = read_source(Path(display)).text
            after = apply_edits(before, changes)
            diffs.append(unified_diff(display, before, after, self.color).rstrip("\n"))
        return "".join(f"\n{d}" for d in diffs)

    def accept(self, applied: Sequence[Diagnostic]) -> None:
        """Apply, later, the parts of the fixes of `applied` (once per fix)."""
        for diagnostic in applied:
            for display, changes in self._edits(diagnostic).items():
                known = self.pending.setdefault(display, [])
                known.extend(edit for edit in changes if edit not in known)
            self._accepted.add(diagnostic.moves)

    def _edits(self, diagnostic: Diagnostic) -> dict[str, list[TextEdit]]:
        if not diagnostic.moves or diagnostic.moves in self._accepted:
            return {}
        edits: dict[str, list[TextEdit]] = {}
        for display, part in self.by_fix.get(diagnostic.moves, []):
            edits.setdefault(display, []).extend(part.edits)
        return edits


class _ReviewFailed(Exception):
    """Re-checking a file during the review failed (e.g. a fix broke the code)."""


def _ask(prompt: str) -> str:
    """One answer: on a terminal one key, as `git add -p` with `interactive.singleKey` reads
    it (Enter alone is passed over: a habit, not an answer), else a line of input; end of input
    and Ctrl-C end the review (`q`)."""
    try:
        if not sys.stdin.isatty():
            answer = input(prompt)
            click.echo(answer)  # piped: shown, so that the transcript reads as typed
            return answer
        if termios is None:
            return input(prompt)
        click.echo(prompt, nl=False)
        key = "\r"
        while key in ("\r", "\n"):
            key = _key(sys.stdin.fileno())
        click.echo(key)
        return key
    except (EOFError, KeyboardInterrupt):
        click.echo()
        raise


def _key(fd: int) -> str:
    """One key from the terminal `fd`, unechoed. The terminal leaves line mode at once
    (`TCSANOW`), so that a key typed before the question is kept, not flushed as
    `tty.setraw` would; Ctrl-C still interrupts, and Ctrl-D is the end of input."""
    assert termios is not None
    saved = termios.tcgetattr(fd)
    keys = termios.tcgetattr(fd)
    keys[3] &= ~(termios.ICANON | termios.ECHO)  # lflags
    keys[6][termios.VMIN], keys[6][termios.VTIME] = 1, 0
    try:
        termios.tcsetattr(fd, termios.TCSANOW, keys)
        key = os.read(fd, 1).decode("utf-8", "replace")
    finally:
        termios.tcsetattr(fd, termios.TCSADRAIN, saved)
    if key in ("", "\x04"):
        raise EOFError
    return key


def _emit_fixed(outcome: Outcome, tally: Tally, diff: bool, color: bool) -> None:
    """Write (or show) the fixed text of one file; stdin's text always goes to stdout."""
    source = outcome.source
    to_stdout = outcome.stdin and not diff
    if outcome.new_text is None or source is None:
        tally.fixed += len(outcome.fixed)  # by edits in other files only (`Diagnostic.moves`)
        if to_stdout and source is not None:
            sys.stdout.write(source.rendered(source.text))
        return
    tally.changed_files += 1
    tally.fixed += len(outcome.fixed)
    if diff:
        echo(_diff(outcome.display, source, outcome.new_text, color), nl=False)
    elif to_stdout:
        sys.stdout.write(source.rendered(outcome.new_text))
    else:
        try:
            write_source_atomic(source, outcome.new_text)
        except SourceError as error:
            tally.changed_files -= 1
            tally.fixed -= len(outcome.fixed)
            _error(tally, str(error))


@main.command(short_help="Print a rule's documentation (by code or name).")
@click.argument("code")
def explain(code: str) -> None:
    """Print the documentation of the rule CODE (e.g. JF101 or serialize-in-traced)."""
    from jaxfix.report.docs import rule_doc

    rule = find_rule(code)
    if rule is None:
        raise click.UsageError(f"unknown rule: {code} (see `jaxfix rules`)")
    click.echo(rule_doc(rule))


_table_format = click.option(
    "--output-format",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="A table, or JSON for tools.",
)


@main.command(name="rules", short_help="List every rule, and whether it runs by default.")
@_table_format
def list_rules(output_format: str) -> None:
    """List every rule: code, name, fix safety, whether it runs by default, and summary."""
    from jaxfix.report.docs import default_label, rule_url, safety_label

    rules = all_rules()
    if output_format == "json":
        rows = [
            {
                "code": rule.code,
                "name": rule.name,
                "summary": rule.summary,
                "fix": rule.fix_title if rule.fix_safety else None,
                "fix_safety": safety_label(rule),
                "default": default_label(rule),
                "options": dict(rule.options),
                "url": rule_url(rule),
            }
            for rule in rules
        ]
        click.echo(json.dumps(rows, indent=2))
        return
    width = max(len(rule.name) for rule in rules)
    click.echo(f"{'code':<6} {'name':<{width}} {'fix':<6} {'default':<7} summary")
    for rule in rules:
        click.echo(
            f"{rule.code:<6} {rule.name:<{width}} {safety_label(rule):<6}"
            f" {default_label(rule):<7} {rule.summary}"
        )


@main.command(name="sinks", short_help="List the host sinks the rules report, the project's too.")
@_table_format
@click.option(
    "--config",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Read `[tool.jaxfix.sinks]` from this file (default: the nearest pyproject.toml).",
)
@click.option("--isolated", is_flag=True, help="Ignore every configuration file.")
@click.option(
    "--kind",
    "kinds",
    multiple=True,
    type=click.Choice([kind.value for kind in SinkKind]),
    help="List only the sinks of this kind (default: every kind).",
)
def list_sinks(
    output_format: str, config: Path | None, isolated: bool, kinds: tuple[str, ...]
) -> None:
    """List the sink model: each callable's kind, the rule that reports a traced value reaching
    it, and whether it is built in or the project's (`[tool.jaxfix.sinks]`)."""
    from jaxfix.models import numpy_scipy

    wanted = {SinkKind(kind) for kind in kinds} or set(SinkKind)
    table = [
        (row, rule)
        for row, rule in sink_table(_project_sinks(config, isolated))
        if row.kind in wanted
    ]
    if output_format == "json":
        rows = [_sink_json(row, rule.code, rule.name) for row, rule in table]
        click.echo(json.dumps(rows, indent=2))
        return
    width = max(len(row.callable) for row, _ in table)
    click.echo(f"{'kind':<12} {'callable':<{width}} {'rule':<6} origin")
    for row, rule in table:
        click.echo(f"{row.kind:<12} {row.callable:<{width}} {rule.code:<6} {row.origin}")
    if SinkKind.CONVERT in wanted:
        count = len(numpy_scipy.converting())
        click.echo(f"and {count} NumPy and SciPy functions that convert a tracer (JF104, built-in)")


def _project_sinks(config: Path | None, isolated: bool) -> tuple[Sink, ...]:
    """The sinks the configuration of the current folder (or `config`) adds."""

    try:
        settings = ConfigFinder(Overrides(), config, isolated).for_path(Path.cwd())
        validate([settings])
    except ConfigError as error:
        raise BadConfig(str(error)) from error
    return settings.sink_table()


def _sink_json(row: Sink, code: str, name: str) -> dict[str, object]:
    payload = row.payload
    return {
        "kind": str(row.kind),
        "callable": row.callable,
        "rule": code,
        "rule_name": name,
        "origin": str(row.origin),
        "payload": dataclasses.asdict(payload) if payload is not None else None,
        "detail": row.detail or None,
    }


@main.command(short_help="Prove the shipped rewrites under the installed jax.")
@click.option(
    "--rule",
    "-r",
    "selected",
    multiple=True,
    metavar="CODE",
    help="Verify only this rule's fixtures (code or name; repeatable).",
)
@click.option(
    "--jobs", "-j", type=click.IntRange(min=1), default=None, help="Rules proven in parallel."
)
@click.option(
    "--callbacks",
    type=click.Choice(["deferred", "synchronous"]),
    default="deferred",
    show_default=True,
    help="Run host callbacks at the next `jax.effects_barrier()`, as an accelerator may, or"
    " before the jitted call returns, as a CPU does.",
)
@click.option("--verbose", "-v", is_flag=True, help="List every case, not only the failures.")
def verify(selected: tuple[str, ...], jobs: int | None, callbacks: str, verbose: bool) -> None:
    """Prove every shipped rewrite under the installed jax: each fixture's before.py fails as
    documented, its after.py runs and prints what it should, and jaxfix still rewrites one into
    the other. Exit 1 when a proof fails."""
    from importlib import metadata

    from jaxfix.proofs.cases import Callbacks, load_cases
    from jaxfix.proofs.verify import Verdict, rule_of
    from jaxfix.proofs.verify import verify as prove

    try:
        jax_version = metadata.version("jax")
    except metadata.PackageNotFoundError:
        click.echo("Error: jaxfix verify needs jax: pip install 'jaxfix[verify]'", err=True)
        sys.exit(2)
    unknown = [code for code in selected if find_rule(code) is None]
    if unknown:
        raise click.UsageError(f"unknown rule: {', '.join(unknown)} (see `jaxfix rules`)")
    rules = all_rules()
    wanted = {rule.code for rule in (select_rules(selected) if selected else rules)}
    cases = [
        c
        for c in load_cases(projects=True)
        if (r := rule_of(c, rules)) is not None and r.code in wanted
    ]
    click.echo(
        f"Proving {len(cases)} fixture cases under jax {jax_version} ({sys.executable}),"
        f" host callbacks {callbacks}"
    )
    counts = dict.fromkeys(Verdict, 0)
    for proof in prove(cases, rules, jobs or os.cpu_count() or 1, Callbacks(callbacks)):
        counts[proof.verdict] += 1
        rule = rule_of(proof.case, rules)
        label = f"{rule.code if rule else '?'} {proof.case.id}"
        if verbose or proof.verdict is not Verdict.PROVEN:
            click.echo(f"{proof.verdict.value:<8} {label}")
            for reason in proof.reasons:
                click.echo(f"         {reason}")
    summary = ", ".join(f"{n} {verdict.value}" for verdict, n in counts.items())
    click.echo(f"{summary} (jax {jax_version})")
    sys.exit(1 if counts[Verdict.FAILED] else 0)


@main.command(short_help="Run the language server on stdio, for editors.")
def lsp() -> None:
    """Run the language server on stdio: diagnostics and quick fixes in any LSP editor."""
    from jaxfix.lsp.server import serve

    serve()


@main.command(name="clean")
@_cache_dir
def clean_cache(cache_dir: Path | None) -> None:
    """Remove the result cache folder."""
    folder = cache_dir or project_root() / DEFAULT_FOLDER
    folder = Path(os.path.relpath(folder)) if folder.is_absolute() else folder
    try:
        removed = clean(folder)
    except OSError as error:
        raise click.ClickException(str(error)) from error
    click.echo(f"removed {folder}" if removed else f"no cache at {folder}", err=True)
