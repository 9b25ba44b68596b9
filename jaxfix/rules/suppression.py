"""Suppression comments: `# jaxfix: ignore[JF101]`, `# noqa: JF101`, a bare `# noqa` and
`# jaxfix: ignore-file[JF101]`.

A suppression names rules by code or name (several, comma-separated; a jaxfix comment may end
with `-- reason`). It silences findings that start on its own line, or, when the comment stands
alone on its line, on the next line; a `jaxfix: ignore[...]` comment on a `def` or `class`
header silences the whole definition, and `jaxfix: ignore-file[...]` the whole file (a bare
`jaxfix: ignore-file`, every rule there). A bare `# noqa` silences every finding on its line,
as in Ruff. A jaxfix suppression that silences nothing (or names no rule) is itself reported
by JF001 `unused-suppression`; `# noqa` comments belong to every linter, so only their `JF`
codes count, and they are never reported as unused.

A jaxfix comment that names no rule (`# jaxfix: ignore`, `ignore[]`) silences nothing: unlike
a bare `# noqa`, it is not a blanket suppression (a finding here is a program that fails at
run time, which one comment should not hide wholesale). JF001 reports it with the codes to name.
"""

from __future__ import annotations

import dataclasses
import difflib
import io
import re
import sys
import tokenize
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from jaxfix.models.diagnostic import Diagnostic

UNUSED_CODE = "JF001"
UNUSED_NAME = "unused-suppression"

JAXFIX_COMMENT = re.compile(r"#\s*jaxfix:\s*ignore\[(?P<names>[^\]]*)\](?:\s*--\s*(?P<reason>.*))?")
# A jaxfix comment with no brackets after `ignore` (what follows is not a list of rules).
BARE_COMMENT = re.compile(r"#\s*jaxfix:\s*ignore(?![\w\[-])")
# `ignore-file[...]`, or `ignore-file` alone: every rule in the file.
FILE_COMMENT = re.compile(
    r"#\s*jaxfix:\s*ignore-file(?:\[(?P<names>[^\]]*)\]|(?![\w\[-]))(?:\s*--\s*(?P<reason>.*))?"
)
_NOQA = re.compile(r"#\s*noqa:\s*(?P<names>[A-Z]+[0-9]+(?:\s*,\s*[A-Z]+[0-9]+)*)", re.I)
_BARE_NOQA = re.compile(r"#\s*noqa(?!\s*:)\b", re.I)
# A `noqa` that may name a jaxfix code, or names none: only those count, and tokenizing a whole
# file for its comments costs as much as parsing it (libraries write `# noqa: F401` everywhere).
_JAXFIX_NOQA = re.compile(r"(?i:noqa)[^\n]*JF[0-9]|(?i:#\s*noqa)(?!\s*:)\b")
EVERY = "*"  # the selector of a blanket suppression (a bare `noqa` or `ignore-file`)
_DEFINITIONS = frozenset({"def", "class"})


@dataclass(frozen=True)
class Suppression:
    """One rule named by one suppression comment."""

    selector: str  # as written: a code or a rule name; "" for a comment that names none
    line: int  # where the comment is (1-based)
    column: int  # 0-based
    end_column: int
    target_line: int  # the first line whose findings it silences
    own: bool  # a `jaxfix: ignore` comment (not a `noqa`)
    end_line: int = 0  # the last such line, when after `target_line` (a definition, the file)

    def covers(self, line: int) -> bool:
        return self.target_line <= line <= max(self.target_line, self.end_line)


def find(text: str) -> list[Suppression]:
    """Every suppression in `text`'s comments (never in strings)."""
    if "jaxfix:" not in text and ("noqa" not in text.lower() or not _JAXFIX_NOQA.search(text)):
        return []  # (the regular expression scans every `noqa` to its line's end)
    found: list[Suppression] = []
    # A `def` or `class` header being read: the indices in `found` of its jaxfix comments;
    # then, once it ends, those awaiting its body's INDENT; then the bodies open, by depth.
    header: list[int] | None = None
    pending: list[int] | None = None
    bodies: list[tuple[int, list[int]]] = []
    depth, last_line, previous = 0, 0, ""
    try:
        for token in tokenize.generate_tokens(io.StringIO(text, newline=None).readline):
            kind = token.type
            if kind == tokenize.COMMENT:
                parsed = _parse(token)
                if header is not None:
                    header += [len(found) + i for i, s in enumerate(parsed) if _on_line(s)]
                found.extend(parsed)
                continue
            if kind == tokenize.NL:
                continue
            if kind == tokenize.INDENT:
                depth += 1
                if pending:
                    bodies.append((depth, pending))
            elif kind == tokenize.DEDENT:
                depth -= 1
                while bodies and bodies[-1][0] > depth:
                    for i in bodies.pop()[1]:
                        found[i] = dataclasses.replace(found[i], end_line=last_line)
            pending = None
            if kind == tokenize.NEWLINE:
                last_line = token.start[0]
                header, pending = None, header
            elif token.string in _DEFINITIONS and previous in ("", "async"):
                header = []
            ends = kind in (tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT)
            previous = "" if ends else token.string
    except (tokenize.TokenError, SyntaxError):
        pass  # a file the parser rejects is reported as such; its comments do not matter
    return found


def _on_line(suppression: Suppression) -> bool:
    """A jaxfix suppression of its own line (not of the next one, nor of the file)."""
    return (
        suppression.own and suppression.target_line == suppression.line and not suppression.end_line
    )


def _parse(token: tokenize.TokenInfo) -> list[Suppression]:
    (line, column), (_, end_column) = token.start, token.end
    alone = not token.line[:column].strip()  # the comment's physical line
    target = line + 1 if alone else line
    whole = FILE_COMMENT.search(token.string)
    if whole is not None:  # the whole file
        names = [n.strip() for n in (whole.group("names") or EVERY).split(",") if n.strip()]
        return [
            Suppression(name, line, column, end_column, 1, True, sys.maxsize)
            for name in names or [""]
        ]
    match = JAXFIX_COMMENT.search(token.string)
    own = match is not None
    if match is None:
        if BARE_COMMENT.search(token.string):
            return [Suppression("", line, column, end_column, target, own=True)]
        match = _NOQA.search(token.string)
        if match is None:
            if _BARE_NOQA.search(token.string):
                return [Suppression(EVERY, line, column, end_column, target, own=False)]
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
    found = list(diagnostics)
    for diagnostic in found:
        matching = [
            s
            for s in suppressions
            if s.covers(diagnostic.line)
            and (s.selector == EVERY or known.get(s.selector) == diagnostic.code)
        ]
        used.update(matching)
        if not matching:
            kept.append(diagnostic)
    if report_unused:
        kept += [
            _unused(s, known, sorted({d.code for d in found if s.covers(d.line)}))
            for s in suppressions
            if _is_unused(s, used, known, active)
        ]
    kept.sort(key=lambda d: (d.line, d.column, d.code))
    return kept


def _is_unused(
    suppression: Suppression, used: set[Suppression], known: dict[str, str], active: set[str]
) -> bool:
    if not suppression.own or suppression in used or suppression.selector == EVERY:
        return False  # (a bare `ignore-file` may cover rules that did not run)
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
        word = suppression.selector
        close = difflib.get_close_matches(
            word.upper() if word[:2].upper() == "JF" else word, known, n=1
        )
        if close:
            message += f" (did you mean `{close[0]}`?)"
    return Diagnostic(
        code=UNUSED_CODE,
        name=UNUSED_NAME,
        message=message,
        line=suppression.line,
        column=suppression.column,
        end_line=suppression.line,
        end_column=suppression.end_column,
    )
