"""What every output format renders: the findings of each checked file, and the positions,
fix labels and fixed texts the formats share."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import click

from jaxfix.models.cells import CellMap
from jaxfix.models.diagnostic import Diagnostic, TextEdit
from jaxfix.models.edits import apply_edits
from jaxfix.rules.registry import find_rule


@dataclass(frozen=True)
class FileResult:
    """One checked file: its path as displayed (as given on the command line), its source
    (for context lines and diffs; None when it could not be read), its findings, each
    fixable one with its fix as text edits in `Diagnostic.edits`, and its error, if any."""

    path: str
    text: str | None
    diagnostics: Sequence[Diagnostic]
    error: str | None = None  # the one-line problem when the file could not be analysed
    # A notebook's cells: its positions are then `cell N:line:col` (lines of `text`, the
    # Python of its code cells, otherwise)
    cells: CellMap | None = None
    # Whether its settings make unsafe fixes (`[*]` marks the fixes `apply` makes).
    unsafe_fixes: bool = False

    def fixed_text(self, diagnostic: Diagnostic) -> str | None:
        """The file with only this finding's fix applied; None without edits or source."""
        if self.text is None or not diagnostic.edits:
            return None
        return apply_edits(self.text, diagnostic.edits)


def findings(results: Sequence[FileResult]) -> Iterator[tuple[FileResult, Diagnostic]]:
    """Every finding of every file, in order, with its file."""
    for result in results:
        for diagnostic in result.diagnostics:
            yield result, diagnostic


def fix_description(diagnostic: Diagnostic) -> str:
    """E.g. `Remove the cache decorator (safe fix)`; only for a fixable finding."""
    assert diagnostic.fix_safety is not None
    return f"{diagnostic.fix_title or ''} ({diagnostic.fix_safety.value} fix)"


def in_cell(cells: CellMap | None, line: int) -> tuple[int | None, int]:
    """The cell of a notebook's line (None for any other file) and the line in it."""
    if cells is None:
        return None, line
    return cells.locate(line)


def cell_start(result: FileResult, diagnostic: Diagnostic) -> tuple[int | None, int, int]:
    """Where the finding starts as its file shows it: a notebook's cell (None for any other
    file), the 1-based line in it and the 1-based column."""
    cell, line = in_cell(result.cells, diagnostic.line)
    return cell, line, diagnostic.column + 1


def cell_end(result: FileResult, diagnostic: Diagnostic) -> tuple[int, int]:
    """Where the finding ends (exclusive): 1-based line (in its cell, for a notebook: a
    finding's code is one cell's) and 1-based column."""
    _, line = in_cell(result.cells, diagnostic.line)
    return line + diagnostic.end_line - diagnostic.line, diagnostic.end_column + 1


def related(result: FileResult, diagnostic: Diagnostic) -> list[tuple[int | None, int, int]]:
    """The finding's other places (`Diagnostic.related`) as `cell_start` gives its own."""
    return [(*in_cell(result.cells, line), column + 1) for line, column in diagnostic.related]


def edit_span(edit: TextEdit) -> tuple[int, int, int, int]:
    """An edit's range as 1-based line, column, end line, end column (end exclusive)."""
    return edit.line, edit.column + 1, edit.end_line, edit.end_column + 1


def style(text: str, color: bool, **styles: Any) -> str:
    """`text` styled for a terminal (`click.style`) when `color`, else as it is."""
    return click.style(text, **styles) if color else text


def rule_url_of(code: str) -> str | None:
    """The documentation address of the rule with this code; None for an unknown code."""
    # Imported here: the registry imports every rule, and so LibCST, which the human formats
    # of a run answered from the cache do without.
    from jaxfix.report.docs import rule_url

    rule = find_rule(code)
    return rule_url(rule) if rule is not None else None
