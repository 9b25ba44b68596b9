"""The `json` format: a JSON array with one object per finding, in the order of the files and
of the findings in each (schema: `jaxfix/schemas/json-output.schema.json`).

Each object has, in this order: `code`, `name`, `message` (at most 160 characters), `note`
(what the finding says beyond it: advice, why it has no fix; null for none), `path` (as
displayed), `location`
and `end_location` (`{"line", "column"}`, both 1-based, the column in code points as `text`
prints it, the end exclusive), `url` (the rule's documentation, null for an unknown code) and
`fix`: null, or `{"title", "safety"}` (`"safe"` or `"unsafe"`: Ruff's applicability) with
`edits`, the fix as `{"location", "end_location", "content"}` replacements of the original
file that together give the file with this one fix (empty when the run did not compute them),
then `cell` (as Ruff's: a notebook's code cell, counted from 1, whose lines `location` and
`end_location` count; null for any other file) and `related`, the other places of the same
object (`{"cell", "location"}` each: a memo dict's lookup and store), empty for most. A
notebook's fix edits are in the lines of its code cells' joined text, which `apply` edits.
Non-ASCII characters are written as `\\u` escapes.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from jaxfix.models.diagnostic import Diagnostic, TextEdit
from jaxfix.report.formats.model import (
    FileResult,
    cell_end,
    cell_start,
    edit_span,
    findings,
    related,
    rule_url_of,
)


def render_json(results: Sequence[FileResult]) -> str:
    """The findings as a JSON array, indented by 2, with a trailing newline."""
    items = [_finding(result, diagnostic) for result, diagnostic in findings(results)]
    return json.dumps(items, indent=2) + "\n"


def _finding(result: FileResult, diagnostic: Diagnostic) -> dict[str, Any]:
    cell, line, column = cell_start(result, diagnostic)
    return {
        "code": diagnostic.code,
        "name": diagnostic.name,
        "message": diagnostic.message,
        "note": diagnostic.note or None,
        "path": result.path,
        "location": _position(line, column),
        "end_location": _position(*cell_end(result, diagnostic)),
        "url": rule_url_of(diagnostic.code),
        "fix": _fix(diagnostic),
        "cell": cell,
        "related": [
            {"cell": cell, "location": _position(line, column)}
            for cell, line, column in related(result, diagnostic)
        ],
    }


def _fix(diagnostic: Diagnostic) -> dict[str, Any] | None:
    if diagnostic.fix_safety is None:
        return None
    return {
        "title": diagnostic.fix_title or "",
        "safety": diagnostic.fix_safety.value,
        "edits": [_edit(edit) for edit in diagnostic.edits],
    }


def _edit(edit: TextEdit) -> dict[str, Any]:
    line, column, end_line, end_column = edit_span(edit)
    return {
        "location": _position(line, column),
        "end_location": _position(end_line, end_column),
        "content": edit.new_text,
    }


def _position(line: int, column: int) -> dict[str, int]:
    return {"line": line, "column": column}
