"""Checking or fixing one file: read it, run the engine, turn every failure into a one-line
error for that file (so a run always goes on with the other files)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from jaxfix.analysis.firstpass import InvalidSource
from jaxfix.analysis.project import Place, place_of
from jaxfix.models.diagnostic import Diagnostic
from jaxfix.rules.registry import select_rules
from jaxfix.rules.rule_index import RuleRef
from jaxfix.run import collector
from jaxfix.run.deepstack import call_with_deep_stack
from jaxfix.run.engine import FixError, check_text, run_text
from jaxfix.run.job import Job
from jaxfix.run.options import Options
from jaxfix.run.outcome import Outcome
from jaxfix.run.sourcefile import SourceError, SourceFile, read_source
from jaxfix.run.stamps import digest

if TYPE_CHECKING:
    from libcst import ParserSyntaxError


def load(path: Path) -> SourceFile | Outcome:
    """The file's source, or an Outcome carrying the read error."""
    try:
        return read_source(path)
    except SourceError as error:
        return Outcome(str(path), error=str(error))


def process(path: Path, job: Job) -> Outcome:
    """Read, check (or fix) one file, for a worker process: the outcome in plain values."""
    source = load(path)
    if isinstance(source, Outcome):
        return source
    place = place_of(path) if job.options.packages else None
    outcome = run_job(source, job, place=place)
    outcome.digest = digest(source.raw)
    return outcome.portable()


def run_job(
    source: SourceFile, job: Job, display: str | None = None, place: Place | None = None
) -> Outcome:
    """Check (or fix) one source with the job's rules; never raises."""
    rules = select_rules(job.select, job.ignore, job.extend_select)
    return run(source, rules, job, display, place)


def run(
    source: SourceFile,
    rules: Sequence[RuleRef],
    job: Job,
    display: str | None = None,
    place: Place | None = None,
) -> Outcome:
    """Check (or fix) one source with `rules` as the job says; never raises. With `place`,
    the outcome tells what the file's code calls in the run's packages."""
    name = display or str(source.path)
    outcome = Outcome(name, source)
    options = job.options
    with collector.paused():
        try:
            result = call_with_deep_stack(
                lambda: run_text(
                    source.text,
                    rules,
                    fix=job.fix,
                    unsafe_fixes=job.unsafe_fixes,
                    edits=job.edits,
                    filename=name,
                    options=options,
                    place=place,
                    facts=outcome.facts,
                )
            )
            outcome.diagnostics, outcome.fixed = result.diagnostics, result.fixed
            if result.text != source.text:
                outcome.new_text = result.text
        except InvalidSource as error:
            outcome.error = f"{name}:{error}"
        except _libcst_syntax_error() as error:  # valid for CPython, not for LibCST
            detail = " ".join(error.message.split())
            outcome.error = (
                f"{name}:{error.raw_line}:{error.raw_column + 1}: cannot parse: {detail}"
            )
        except RecursionError:
            outcome.error = f"{name}: too deeply nested to analyse"
        except FixError as error:
            outcome.error = f"{name}: internal error: {error}; the file is left unchanged"
            outcome.diagnostics = _diagnostics_or_empty(source.text, rules, name, options)
        except Exception as error:  # a rule crashed: report it for this file, keep going
            outcome.error = f"{name}: internal error: {type(error).__name__}: {error}"
        return outcome


def _libcst_syntax_error() -> type[ParserSyntaxError]:
    """LibCST's syntax error, asked only once some exception stopped the run: LibCST (a
    fifth of a second to import) is imported only for files whose rules ran."""
    from libcst import ParserSyntaxError

    return ParserSyntaxError


def _diagnostics_or_empty(
    text: str, rules: Sequence[RuleRef], name: str, options: Options
) -> list[Diagnostic]:
    try:
        return call_with_deep_stack(lambda: check_text(text, rules, filename=name, options=options))
    except Exception:
        return []
