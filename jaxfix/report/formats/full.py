"""The `full` format (like Ruff's): each finding's line, the source around it with line
numbers and the span underlined, the fix title with its safety, and the fix's diff."""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence

from jaxfix.models.diagnostic import Diagnostic
from jaxfix.models.edits import source_lines
from jaxfix.report.formats.model import FileResult, findings, fix_description, style
from jaxfix.report.formats.text import also_line, fix_diff, styled_finding_line

CONTEXT = 2  # source lines shown before and after the span
TAB = "    "  # how a tab is shown (a terminal's tab stops would break the underline)


def render_full(results: Sequence[FileResult], color: bool) -> str:
    """Every finding as a block: line, source snippet, help and diff, then a blank line."""
    return "".join(_block(result, diagnostic, color) for result, diagnostic in findings(results))


def _block(result: FileResult, diagnostic: Diagnostic, color: bool) -> str:
    parts = [styled_finding_line(result, diagnostic, color) + "\n"]
    if diagnostic.related:
        parts.append(also_line(result, diagnostic) + "\n")

    gutter = " " * len(str(diagnostic.end_line))
    if result.text is not None:
        lines = [line.rstrip("\r\n") for line in source_lines(result.text)]
        shown = _shown_lines(diagnostic, lines)
        if shown:
            gutter = " " * len(str(shown.stop - 1))
            parts.append(_snippet(lines, shown, diagnostic, gutter, color))
    if diagnostic.note:
        parts.append(style(f"{gutter} = note: {diagnostic.note}", color, fg="cyan") + "\n")
    if diagnostic.fix_safety is not None:
        help_text = f"{gutter} = help: {fix_description(diagnostic)}"
        parts.append(style(help_text, color, fg="cyan") + "\n")
    parts.append(fix_diff(result, diagnostic, color))
    return "".join(parts) + "\n"


def _shown_lines(diagnostic: Diagnostic, lines: Sequence[str]) -> range:
    """The 1-based numbers of the lines to show: the span and its context within the file,
    less blank context lines at either edge (Ruff's layout)."""
    if diagnostic.line > len(lines):
        return range(0)
    first = max(1, diagnostic.line - CONTEXT)
    last = min(len(lines), diagnostic.end_line + CONTEXT)
    while first < diagnostic.line and not lines[first - 1].strip():
        first += 1
    while last > diagnostic.end_line and not lines[last - 1].strip():
        last -= 1
    return range(first, last + 1)


def _snippet(
    lines: Sequence[str], shown: range, diagnostic: Diagnostic, gutter: str, color: bool
) -> str:
    """The shown lines, numbered, each line of the span followed by its underline."""
    bar = style("|", color, fg="blue", bold=True)
    out = [f"{gutter} {bar}"]
    for number in shown:
        line = lines[number - 1]
        label = style(f"{number:>{len(gutter)}}", color, fg="blue", bold=True)
        out.append(f"{label} {bar} " + line.replace("\t", TAB))
        if diagnostic.line <= number <= diagnostic.end_line:
            marks = _underline(line, number, diagnostic)
            if number == diagnostic.end_line:
                marks += f" {diagnostic.code}"
            out.append(f"{gutter} {bar} {style(marks, color, fg='red', bold=True)}")
    out.append(f"{gutter} {bar}")
    return "".join(f"{line.rstrip()}\n" for line in out)


def _underline(line: str, number: int, diagnostic: Diagnostic) -> str:
    """Spaces up to the span's part on this line, then carets under it (at least one)."""
    start = diagnostic.column if number == diagnostic.line else len(line) - len(line.lstrip())
    stop = diagnostic.end_column if number == diagnostic.end_line else len(line)
    stop = min(stop, len(line))
    start = min(start, stop)
    return " " * _width(line[:start]) + "^" * max(1, _width(line[start:stop]))


def _width(text: str) -> int:
    """Terminal cells `text` takes: wide characters (most emoji, CJK) two, combining none."""
    return sum(_cells(char) for char in text)


def _cells(char: str) -> int:
    if char == "\t":
        return len(TAB)
    if unicodedata.combining(char):
        return 0
    return 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1
