"""The `sarif` format: a SARIF 2.1.0 log of one run, for code-scanning services (GitHub code
scanning, Azure DevOps, IDE viewers). Every rule is described in `tool.driver.rules`; each
finding is a result with its region in code points and, when it has edits, its fix as
replacements of the original file."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import PurePath
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from jaxfix import __version__
from jaxfix.models.diagnostic import Diagnostic, TextEdit
from jaxfix.report.formats.model import (
    FileResult,
    cell_end,
    cell_start,
    edit_span,
    findings,
    fix_description,
    related,
)
from jaxfix.rules.registry import all_rules

if TYPE_CHECKING:
    from jaxfix.rules.rule import Rule

SCHEMA = (
    "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
)
VERSION = "2.1.0"
INFORMATION_URI = "https://github.com/jaxfix/jaxfix"
LEVEL = "error"  # every finding is code that fails under jax


def render_sarif(results: Sequence[FileResult]) -> str:
    """The SARIF log as JSON, indented by 2, with a trailing newline."""
    # Imported here: the registry imports every rule, and so LibCST (see `model.rule_url_of`).

    rules = all_rules()
    indexes = {rule.code: index for index, rule in enumerate(rules)}
    run = {
        "tool": {"driver": _driver(rules)},
        "columnKind": "unicodeCodePoints",
        "results": [_result(r, d, indexes) for r, d in findings(results)],
    }
    log = {"$schema": SCHEMA, "version": VERSION, "runs": [run]}
    return json.dumps(log, indent=2) + "\n"


def _driver(rules: Sequence[type[Rule]]) -> dict[str, Any]:
    from jaxfix.report.docs import rule_url

    descriptors = [
        {
            "id": rule.code,
            "name": rule.name,
            "shortDescription": {"text": rule.summary},
            "helpUri": rule_url(rule),
            "defaultConfiguration": {"level": LEVEL},
        }
        for rule in rules
    ]
    return {
        "name": "jaxfix",
        "version": __version__,
        "informationUri": INFORMATION_URI,
        "rules": descriptors,
    }


def _result(file: FileResult, diagnostic: Diagnostic, indexes: Mapping[str, int]) -> dict[str, Any]:
    """A notebook's finding is placed in its cell (`properties.cell`), as the text output
    does; its other places (`Diagnostic.related`) are `relatedLocations`."""
    uri = artifact_uri(file.path)
    result: dict[str, Any] = {"ruleId": diagnostic.code}
    if diagnostic.code in indexes:
        result["ruleIndex"] = indexes[diagnostic.code]
    result["level"] = LEVEL
    text = f"{diagnostic.message}: {diagnostic.note}" if diagnostic.note else diagnostic.message
    result["message"] = {"text": text}
    cell, line, column = cell_start(file, diagnostic)
    region = _region(line, column, *cell_end(file, diagnostic))
    result["locations"] = [_location(uri, region, cell)]
    places = related(file, diagnostic)
    if places:
        result["relatedLocations"] = [
            {**_location(uri, _region(line, column, line, column), cell), "id": number}
            for number, (cell, line, column) in enumerate(places, 1)
        ]
    if diagnostic.fix_safety is not None and diagnostic.edits:
        result["fixes"] = [_fix(uri, diagnostic)]
    return result


def _location(uri: str, region: dict[str, int], cell: int | None) -> dict[str, Any]:
    location: dict[str, Any] = {
        "physicalLocation": {"artifactLocation": {"uri": uri}, "region": region}
    }
    if cell is not None:
        location["properties"] = {"cell": cell}
    return location


def _fix(uri: str, diagnostic: Diagnostic) -> dict[str, Any]:
    return {
        "description": {"text": fix_description(diagnostic)},
        "artifactChanges": [
            {
                "artifactLocation": {"uri": uri},
                "replacements": [_replacement(edit) for edit in diagnostic.edits],
            }
        ],
    }


def _replacement(edit: TextEdit) -> dict[str, Any]:
    return {"deletedRegion": _region(*edit_span(edit)), "insertedContent": {"text": edit.new_text}}


def _region(line: int, column: int, end_line: int, end_column: int) -> dict[str, int]:
    """A SARIF region: 1-based lines and columns, the end column just past the last character."""
    return {"startLine": line, "startColumn": column, "endLine": end_line, "endColumn": end_column}


def artifact_uri(path: str) -> str:
    """The displayed path as a URI: relative with forward slashes and percent-escapes (e.g.
    spaces), or a `file:` URI for an absolute path."""
    pure = PurePath(path)
    if pure.is_absolute():
        return pure.as_uri()
    return quote(pure.as_posix())
