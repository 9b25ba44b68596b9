"""Suppression comments: `# jaxfix: ignore[JF101]` and `# noqa: JF101`.

A suppression names rules by code or name (several, comma-separated; a jaxfix comment may end
with `-- reason`). It silences findings that start on its own line, or, when the comment stands
alone on its line, on the next line. A jaxfix suppression that silences nothing (or names no
rule) is itself reported by JF001 `unused-suppression`; `# noqa` comments belong to every
linter, so only their `JF` codes count, and they are never reported as unused.

A jaxfix comment that names no rule (`# jaxfix: ignore`, `ignore[]`) silences nothing: unlike
a bare `# noqa`, it is not a blanket suppression (a finding here is a program that fails at
run time, which one comment should not hide wholesale). JF001 reports it with the codes to name.
"""

from __future__ import annotations

import io
import re
import tokenize
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from jaxfix.models.diagnostic import Diagnostic

UNUSED_CODE = "JF001"
UNUSED_NAME = "unused-suppression"

JAXFIX_COMMENT = re.compile(r"#\s*jaxfix:\s*ignore\[(?P<names>[^\]]*)\](?:\s*--\s*(?P<reason>.*))?")
# A jaxfix comment with no brackets after `ignore` (what follows is not a list of rules).
BARE_COMMENT = re.compile(r"#\s*jaxfix:\s*ignore(?![\w\[-])")
_NOQA = re.compile(r"#\s*noqa:\s*(?P<names>[A-Z]+[0-9]+(?:\s*,\s*[A-Z]+[0-9]+)*)", re.I)
# A `noqa` that may name a jaxfix code: only those count, and tokenizing a whole file for its
# comments costs as much as parsing it (libraries write `# noqa: F401` everywhere).
_JAXFIX_NOQA = re.compile(r"(?i:noqa)[^\n]*JF[0-9]")


@dataclass(frozen=True)
class Suppression:
    """One rule named by one suppression comment."""

    selector: str  # as written: a code or a rule name; "" for a comment that names none
    line: int  # where the comment is (1-based)
    column: int  # 0-based
    end_column: int
    target_line: int  # the line whose findings it silences
    own: bool  # a `jaxfix: ignore` comment (not a `noqa`)


def find(text: str) -> list[Suppression]:
    """Every suppression in `text`'s comments (never in strings)."""
    if "jaxfix:" not in text and ("JF" not in text or not _JAXFIX_NOQA.search(text)):
        return []  # (the regular expression scans every `noqa` to its line's end)
    found: list[Suppression] = []
    try:
        for token in tokenize.generate_tokens(io.StringIO(text, newline=None).readline):
            if token.type == tokenize.COMMENT:
                found.extend(_parse(token))
    except (tokenize.TokenError, SyntaxError):
        pass  # a file the parser rejects is reported as such; its comments do not matter
    return found


def _parse(token: tokenize.TokenInfo) -> list[Suppression]:
    (line, column), (_, end_column) = token.start, token.end
    alone = not token.line[:column].strip()  # the comment's physical line
    target = line + 1 if alone else line
    match = JAXFIX_COMMENT.search(token.string)
    own = match is not None
    if match is None:
        if BARE_COMMENT.search(token.string):
            return [Suppression("", line, column, end_column, target, own=True)]
        match = _NOQA.search(token.string)
        if match is None:
            return []
    names = [name.strip() for name in match.group("names").split(",") if name.strip()]
    if own and not names:
        names = [""]  # `ignore[]`: reported, as a bare comment is
    return [Suppression(name, line, column, end_column, target, own) for name in names]


def apply(
    diagnostics: Iterable[Diagnostic],
    suppressions: Sequence[Suppression],
    known: dict[str, str],
    active: set[str],
    report_unused: bool,
) -> list[Diagnostic]:
    """The findings no suppression silences, plus a JF001 finding for each jaxfix suppression
    that silenced nothing when `report_unused`. `known` maps every rule's code and name to its
    code; `active` holds the codes of the rules that ran (a suppression of a rule that did not
    run is not known to be unused)."""
    used: set[Suppression] = set()
    kept: list[Diagnostic] = []
    codes_on: dict[int, set[str]] = {}
    for diagnostic in diagnostics:
        codes_on.setdefault(diagnostic.line, set()).add(diagnostic.code)
        matching = [
            s
            for s in suppressions
            if s.target_line == diagnostic.line and known.get(s.selector) == diagnostic.code
        ]
        used.update(matching)
        if not matching:
            kept.append(diagnostic)
    if report_unused:
        kept += [
            _unused(s, known, sorted(codes_on.get(s.target_line, ())))
            for s in suppressions
            if _is_unused(s, used, known, active)
        ]
    kept.sort(key=lambda d: (d.line, d.column, d.code))
    return kept


def _is_unused(
    suppression: Suppression, used: set[Suppression], known: dict[str, str], active: set[str]
) -> bool:
    if not suppression.own or suppression in used:
        return False
    code = known.get(suppression.selector)
    return code is None or code in active


def _unused(suppression: Suppression, known: dict[str, str], codes: list[str]) -> Diagnostic:
    """The JF001 finding of a suppression that silences nothing; `codes`: the findings on the
    line it covers (what a comment naming no rule should name)."""
    if not suppression.selector:
        message = "unused suppression: `jaxfix: ignore` without rules silences nothing"
        if codes:
            message += f"; name them: `# jaxfix: ignore[{', '.join(codes)}]`"
    elif suppression.selector in known:
        message = f"unused suppression: no `{suppression.selector}` finding here"
    else:
        message = f"unused suppression: `{suppression.selector}` is not a jaxfix rule"
    return Diagnostic(
        code=UNUSED_CODE,
        name=UNUSED_NAME,
        message=message,
        line=suppression.line,
        column=suppression.column,
        end_line=suppression.line,
        end_column=suppression.end_column,
    )
