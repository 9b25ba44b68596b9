"""The `text` format: one line per finding (`path:line:col: CODE message [*]`), a second line
naming the fix of a fixable one, and with `--show-fixes` the diff of that fix alone; `concise`:
the finding lines alone."""

from __future__ import annotations

from collections.abc import Sequence

from jaxfix.models.diagnostic import Diagnostic
from jaxfix.report.formats.model import FileResult, findings, style
from jaxfix.report.output import applied, finding_line, place, position, unified_diff

INDENT = "    "


def render_text(results: Sequence[FileResult], color: bool, show_fixes: bool) -> str:
    """Every finding as its line, its fix line and (with `show_fixes`) its fix's diff."""
    parts: list[str] = []
    for result, diagnostic in findings(results):
        parts.append(styled_finding_line(result, diagnostic, color) + "\n")
        if diagnostic.related:
            parts.append(also_line(result, diagnostic) + "\n")
        if diagnostic.note:
            parts.append(f"{INDENT}note: {diagnostic.note}\n")
        if diagnostic.fix_safety is not None:
            parts.append(fix_line(diagnostic, color) + "\n")
        if show_fixes:
            parts.append(fix_diff(result, diagnostic, color))
    return "".join(parts)


def render_concise(results: Sequence[FileResult], color: bool) -> str:
    """Every finding as its line alone (as Ruff's `concise`)."""
    return "".join(
        styled_finding_line(result, diagnostic, color) + "\n"
        for result, diagnostic in findings(results)
    )


def styled_finding_line(result: FileResult, diagnostic: Diagnostic, color: bool) -> str:
    """`jaxfix.report.output.finding_line`, with the path, code and `[*]` styled when `color`."""
    path, cells, unsafe_fixes = result.path, result.cells, result.unsafe_fixes
    if not color:
        return finding_line(path, diagnostic, cells, unsafe_fixes)
    marker = f" {style('[*]', color, fg='cyan')}" if applied(diagnostic, unsafe_fixes) else ""
    return (
        f"{style(path, color, bold=True)}:{position(diagnostic, cells)}: "
        f"{style(diagnostic.code, color, fg='red', bold=True)} {diagnostic.message}{marker}"
    )


def also_line(result: FileResult, diagnostic: Diagnostic) -> str:
    """`    also at 11:16, 13:5`: the other places of the finding's object."""
    places = (place(line, column, result.cells) for line, column in diagnostic.related)
    return f"{INDENT}also at {', '.join(places)}"


def fix_line(diagnostic: Diagnostic, color: bool) -> str:
    """`    fix (safe): <title>` (or `(unsafe)`); only for a fixable finding."""
    assert diagnostic.fix_safety is not None
    safety = f"({diagnostic.fix_safety.value})"
    shown = style(safety, color, fg="green" if safety == "(safe)" else "yellow")
    return f"{INDENT}fix {shown}: {diagnostic.fix_title or ''}"


def fix_diff(result: FileResult, diagnostic: Diagnostic, color: bool) -> str:
    """The unified diff of this one fix (empty without edits or source)."""
    fixed = result.fixed_text(diagnostic)
    if fixed is None or result.text is None:
        return ""
    return unified_diff(result.path, result.text, fixed, color)
