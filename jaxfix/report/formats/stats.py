"""`--statistics`: how often each rule fired, most frequent first (Ruff's layout)."""

from __future__ import annotations

from collections.abc import Sequence

from jaxfix.models.diagnostic import Diagnostic
from jaxfix.report.formats.model import FileResult, findings, style
from jaxfix.report.output import applied

FIXABLE = "[*]"


def render_statistics(results: Sequence[FileResult], color: bool) -> str:
    """`count  CODE  name  [*]` per rule that fired, in aligned columns, sorted by count
    (descending) then code; `[*]` when `apply` makes the fix of every finding of the rule."""
    by_code: dict[str, list[Diagnostic]] = {}
    made: dict[str, bool] = {}  # every finding of the code has a fix `apply` makes
    for result, diagnostic in findings(results):
        by_code.setdefault(diagnostic.code, []).append(diagnostic)
        made[diagnostic.code] = made.get(diagnostic.code, True) and applied(
            diagnostic, result.unsafe_fixes
        )
    rows = sorted(by_code.items(), key=lambda item: (-len(item[1]), item[0]))
    if not rows:
        return ""
    count_width = max(len(str(len(found))) for _, found in rows)
    code_width = max(len(code) for code, _ in rows)
    name_width = max(len(found[0].name) for _, found in rows)
    lines = []
    for code, found in rows:
        fixable = made[code]
        line = (
            f"{len(found):>{count_width}}  "
            + style(f"{code:<{code_width}}", color, fg="red", bold=True)
            + f"  {found[0].name:<{name_width}}"
            + (f"  {style(FIXABLE, color, fg='cyan')}" if fixable else "")
        )
        lines.append(line.rstrip() + "\n")
    return "".join(lines)
