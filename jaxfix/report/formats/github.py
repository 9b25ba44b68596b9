"""The `github` format: one GitHub Actions `::error` workflow command per finding, which the
runner shows as an annotation on the line of the pull request's diff."""

from __future__ import annotations

from collections.abc import Sequence

from jaxfix.models.diagnostic import Diagnostic
from jaxfix.report.formats.model import FileResult, cell_end, cell_start, findings

# How the runner's command parser reads data and property values (actions/toolkit's
# `escapeData` and `escapeProperty`); `%` first, so that escapes are not escaped again.
_DATA_ESCAPES = (("%", "%25"), ("\r", "%0D"), ("\n", "%0A"))
_PROPERTY_ESCAPES = (*_DATA_ESCAPES, (":", "%3A"), (",", "%2C"))


def render_github(results: Sequence[FileResult]) -> str:
    """One workflow command line per finding."""
    return "".join(command(r, d) + "\n" for r, d in findings(results))


def command(result: FileResult, diagnostic: Diagnostic) -> str:
    """`::error title=jaxfix (CODE),file=…,line=…,col=…,endLine=…,endColumn=…::CODE message`;
    a notebook's finding at its line in its cell, the message starting `cell N: `."""
    cell, line, column = cell_start(result, diagnostic)
    end_line, end_column = cell_end(result, diagnostic)
    properties = {
        "title": f"jaxfix ({diagnostic.code})",
        "file": result.path,
        "line": str(line),
        "col": str(column),
        "endLine": str(end_line),
        "endColumn": str(end_column),
    }
    joined = ",".join(
        f"{key}={_escape(value, _PROPERTY_ESCAPES)}" for key, value in properties.items()
    )
    where = f"cell {cell}: " if cell is not None else ""
    note = f"\n{diagnostic.note}" if diagnostic.note else ""
    message = _escape(f"{where}{diagnostic.code} {diagnostic.message}{note}", _DATA_ESCAPES)
    return f"::error {joined}::{message}"


def _escape(text: str, escapes: Sequence[tuple[str, str]]) -> str:
    for raw, escaped in escapes:
        text = text.replace(raw, escaped)
    return text
