"""Checking or fixing one file: read it, run the engine, turn every failure into a one-line
error for that file (so a run always goes on with the other files)."""

from __future__ import annotations

import ast
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import libcst as cst

from jaxfix.engine import FixError, Result, check_text, fix_text
from jaxfix.rule import Diagnostic, Rule
from jaxfix.sourcefile import SourceError, SourceFile, read_source


@dataclass
class Outcome:
    """What happened to one file."""

    display: str
    source: SourceFile | None = None
    diagnostics: list[Diagnostic] = field(default_factory=list)
    fixed: list[Diagnostic] = field(default_factory=list)
    new_text: str | None = None  # set when fixes changed the text
    error: str | None = None  # a one-line problem, prefixed by the file's name


def load(path: Path) -> SourceFile | Outcome:
    """The file's source, or an Outcome carrying the read error."""
    try:
        return read_source(path)
    except SourceError as error:
        return Outcome(str(path), error=str(error))


def run(
    source: SourceFile,
    rules: Sequence[type[Rule]],
    *,
    fix: bool,
    unsafe_fixes: bool = False,
    display: str | None = None,
) -> Outcome:
    """Check (or fix) one source; never raises."""
    name = display or str(source.path)
    outcome = Outcome(name, source)
    try:
        if fix:
            result: Result = fix_text(source.text, rules, unsafe_fixes=unsafe_fixes, filename=name)
            outcome.diagnostics, outcome.fixed = result.diagnostics, result.fixed
            if result.text != source.text:
                outcome.new_text = result.text
        else:
            outcome.diagnostics = check_text(source.text, rules)
    except cst.ParserSyntaxError as error:
        outcome.error = _syntax_error(name, source.text, error)
    except RecursionError:
        outcome.error = f"{name}: too deeply nested to analyse"
    except FixError as error:
        outcome.error = f"{name}: left unchanged: {error}"
        outcome.diagnostics = _diagnostics_or_empty(source.text, rules)
    except Exception as error:  # a rule crashed: report it for this file, keep going
        outcome.error = f"{name}: internal error: {type(error).__name__}: {error}"
    return outcome


def _syntax_error(name: str, text: str, error: cst.ParserSyntaxError) -> str:
    """One line, with CPython's wording when CPython agrees the code is invalid."""
    try:
        compile(text, name, "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
    except SyntaxError as python_error:
        return (
            f"{name}:{python_error.lineno}:{python_error.offset}: syntax error: {python_error.msg}"
        )
    except (ValueError, RecursionError, MemoryError):
        pass
    detail = " ".join(error.message.split())
    return f"{name}:{error.raw_line}:{error.raw_column + 1}: cannot parse: {detail}"


def _diagnostics_or_empty(text: str, rules: Sequence[type[Rule]]) -> list[Diagnostic]:
    try:
        return check_text(text, rules)
    except Exception:
        return []
