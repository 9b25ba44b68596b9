"""How `jaxfix check` prints its findings (`--output-format`, `--statistics`): pure functions
from the checked files to the text that goes to stdout. The summary line and read or parse
errors go to stderr, from the CLI.

- `text`: `path:line:col: CODE message [*]`, then `    fix (safe|unsafe): title` for a
  fixable finding, and with `show_fixes` the diff of that fix alone;
- `concise`: the finding lines alone, one per finding (no fix lines, no diffs);
- `full`: the finding line, the source around it with the span underlined, the fix title with
  its safety, and the fix's diff (like Ruff's `full`);
- `json`: an array of findings (`jaxfix/schemas/json-output.schema.json`, see `jsonout`);
- `sarif`: a SARIF 2.1.0 log (code scanning), with every rule and each fix's replacements;
- `github`: GitHub Actions `::error` workflow commands (annotations on the pull request);
- `junit`: JUnit XML, one test suite per file and one failing test case per finding.

Lines are 1-based and columns 1-based code points everywhere, ends exclusive.
"""

from __future__ import annotations

from collections.abc import Sequence

from jaxfix.report.formats.model import FileResult

# Each format is imported when it is asked for (`xml`, `json`, `urllib` are not free).

__all__ = ["FORMATS", "STREAMING_FORMATS", "FileResult", "render", "statistics"]

FORMATS = ("text", "concise", "full", "json", "sarif", "github", "junit")
# Formats whose output for many files is their outputs for each file, one after the other: the
# CLI can print each file's findings as soon as they are known.
STREAMING_FORMATS = ("text", "concise", "full", "github")


def render(
    fmt: str, results: Sequence[FileResult], *, color: bool = False, show_fixes: bool = False
) -> str:
    """The findings of `results` in format `fmt` (one of `FORMATS`). `color` styles the human
    formats (`text`, `full`) for a terminal; `show_fixes` adds each fix's diff to `text`
    (`full` always shows it; the machine formats always carry the edits)."""
    match fmt:
        case "text":
            from jaxfix.report.formats.text import render_text

            return render_text(results, color, show_fixes)
        case "concise":
            from jaxfix.report.formats.text import render_concise

            return render_concise(results, color)
        case "full":
            from jaxfix.report.formats.full import render_full

            return render_full(results, color)
        case "json":
            from jaxfix.report.formats.jsonout import render_json

            return render_json(results)
        case "sarif":
            from jaxfix.report.formats.sarif import render_sarif

            return render_sarif(results)
        case "github":
            from jaxfix.report.formats.github import render_github

            return render_github(results)
        case "junit":
            from jaxfix.report.formats.junit import render_junit

            return render_junit(results)
    raise ValueError(f"unknown output format {fmt!r} (one of {', '.join(FORMATS)})")


def statistics(results: Sequence[FileResult], *, color: bool = False) -> str:
    """One line per rule that fired: `count  CODE  name  [*]`, most frequent first."""
    from jaxfix.report.formats.stats import render_statistics

    return render_statistics(results, color)
