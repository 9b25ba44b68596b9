"""Suppress every current finding: the engine of `jaxfix check --add-ignore[=REASON]`.

A team adopting jaxfix on a large codebase silences what it finds today and fixes it later.
Each line with findings gets one suppression naming every code found on it, in the first of
these places that works: merged into a `# jaxfix: ignore[...]` comment that already covers the
line (on it, or alone on the line above), appended to the line (after any other comment, when
`suppression.find` still reads both), or alone on a new line above it. A place inside a string
or at a backslash continuation is never used, nor one that would hide a suppression already
there; a line with no such place is left alone and its findings are returned. JF001 findings
are ignored: an unused suppression is fixed by deleting it, not by adding another.
"""

from __future__ import annotations

import functools
import io
import tokenize
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

from jaxfix.models.diagnostic import Diagnostic
from jaxfix.models.edits import source_lines
from jaxfix.rules import suppression

_LINE_BREAKS = frozenset({tokenize.NEWLINE, tokenize.NL})
# f-strings (Python 3.12) and t-strings (3.14) come as several tokens: a line break between
# their start and end tokens is inside the string.
_STRING_STARTS = frozenset({"FSTRING_START", "TSTRING_START"})
_STRING_ENDS = frozenset({"FSTRING_END", "TSTRING_END"})


@dataclass
class _Source:
    """The text as lines, what its tokens say about them, and the changes made so far."""

    bodies: list[str]  # each line without its line break
    breaks: list[str]  # each line's break, "" for an unterminated last line
    open_ended: set[int] = field(default_factory=set)  # lines that take no comment at their end
    comments: dict[int, tokenize.TokenInfo] = field(default_factory=dict)  # the one ending a line
    above: dict[int, str] = field(default_factory=dict)  # comment lines inserted above a line

    def text(self) -> str:
        """The text with the changes, every original line break kept."""
        parts: list[str] = []
        for line, (body, end) in enumerate(zip(self.bodies, self.breaks, strict=True), 1):
            if line in self.above:
                parts += [self.above[line], self.breaks[line - 2] if line > 1 else end or "\n"]
            parts += [body, end]
        return "".join(parts)


def add_suppressions(
    text: str, diagnostics: Sequence[Diagnostic], reason: str | None = None
) -> tuple[str, list[Diagnostic]]:
    """`text` with a suppression for every finding of `diagnostics` (found in `text`: a text
    the tokenizer rejects raises its error), and the findings no valid place could be found for.

    A new comment ends with ` -- <reason>` (stripped) when `reason` is given; a merged one keeps
    its own reason. `ValueError` for a reason that is blank or not one line of printable text
    (`str.isprintable`: no line break, tab or control character; `]` and `#` are harmless, as
    the codes end at the first `]`), and for a finding outside the text."""
    tail = _tail(reason)
    lines = _codes_by_line(diagnostics)
    if not lines:
        return text, []
    source = _read(text)
    outside = sorted(line for line in lines if not 1 <= line <= len(source.bodies))
    if outside:
        raise ValueError(f"a finding on line {outside[0]} of a {len(source.bodies)}-line text")
    failed = {line for line, codes in lines.items() if not _suppress(source, line, codes, tail)}
    skipped = [d for d in diagnostics if d.line in failed and d.code != suppression.UNUSED_CODE]
    return source.text(), skipped


def _tail(reason: str | None) -> str:
    """What follows the brackets of a new suppression: nothing, or ` -- reason`."""
    if reason is None:
        return ""
    text = reason.strip()
    if not text or not text.isprintable():
        raise ValueError(f"a suppression reason must be one line of printable text: {reason!r}")
    return f" -- {text}"


def _codes_by_line(diagnostics: Sequence[Diagnostic]) -> dict[int, list[str]]:
    """The codes found on each line, sorted and deduplicated, JF001 left out."""
    codes: dict[int, set[str]] = {}
    for d in diagnostics:
        if d.code != suppression.UNUSED_CODE:
            codes.setdefault(d.line, set()).add(d.code)
    return {line: sorted(found) for line, found in codes.items()}


def _read(text: str) -> _Source:
    """Split `text` into lines and find, from its tokens, each line's comment and the lines
    that end inside a string or with a backslash (no line break token ends those)."""
    lines = source_lines(text)
    bodies = [line.rstrip("\r\n") for line in lines]
    source = _Source(bodies, [line[len(body) :] for line, body in zip(lines, bodies, strict=True)])
    # The tokenizer reads `\n` as the only line break (and `\r` as part of a line).
    ended, comments = _tokens("".join(f"{body}\n" for body in bodies))
    source.open_ended = set(range(1, len(lines) + 1)) - ended
    source.comments = dict(comments)
    return source


@functools.lru_cache(maxsize=4)
def _tokens(text: str) -> tuple[frozenset[int], Mapping[int, tokenize.TokenInfo]]:
    """The lines of `text` that a line break token ends, and each line's comment. Kept for
    the last few texts: the language server asks again at each move of the cursor onto a
    finding of the same document (Python's tokenizer takes 60 ms for 3,000 lines)."""
    ended: set[int] = set()
    comments: dict[int, tokenize.TokenInfo] = {}
    depth = 0
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        name = tokenize.tok_name[token.type]
        depth += (name in _STRING_STARTS) - (name in _STRING_ENDS)
        if depth == 0 and token.type in _LINE_BREAKS:
            ended.add(token.start[0])
        elif depth == 0 and token.type == tokenize.COMMENT:
            comments[token.start[0]] = token
    return frozenset(ended), MappingProxyType(comments)


def _suppress(source: _Source, line: int, codes: list[str], tail: str) -> bool:
    """Suppress `codes` on `line` in the first place that works; False when none does."""
    return (
        _merge(source, source.comments.get(line), codes)
        or _merge(source, _alone_comment(source, line - 1), codes)
        or _append(source, line, codes, tail)
        or _insert_above(source, line, codes, tail)
    )


def _merge(source: _Source, comment: tokenize.TokenInfo | None, codes: list[str]) -> bool:
    """Add `codes` to the brackets of `comment` if it is a jaxfix suppression (its reason and
    every other character stay)."""
    if comment is None:
        return False
    match = suppression.JAXFIX_COMMENT.search(comment.string)
    bare = suppression.BARE_COMMENT.search(comment.string) if match is None else None
    if bare is not None:  # a comment that names no rule: give it brackets
        named = f"{bare.group()}[{', '.join(codes)}]"
        new_comment = comment.string[: bare.start()] + named + comment.string[bare.end() :]
        return _replace_comment(source, comment, new_comment, codes)
    if match is None:
        return False
    names = match.group("names")
    new = [code for code in codes if code not in {name.strip() for name in names.split(",")}]
    if not new:
        return True  # already named: nothing to add
    kept = names.rstrip(", \t")
    merged = ", ".join([kept, *new] if kept.strip() else new)
    start, end = match.span("names")
    merged_comment = comment.string[:start] + merged + comment.string[end:]
    return _replace_comment(source, comment, merged_comment, codes)


def _append(source: _Source, line: int, codes: list[str], tail: str) -> bool:
    """Put a new suppression at the end of `line`, after any comment already there."""
    if line in source.open_ended:
        return False
    ours = _new_comment(codes, tail)
    comment = source.comments.get(line)
    if comment is not None:
        return _replace_comment(source, comment, f"{comment.string.rstrip()}  {ours}", codes)
    source.bodies[line - 1] = source.bodies[line - 1].rstrip(" \t") + "  " + ours
    return True


def _insert_above(source: _Source, line: int, codes: list[str], tail: str) -> bool:
    """Put a new suppression alone on a new line above `line`, indented like it: only where a
    line may start (the line above ends outside any string, without a backslash) and where no
    suppression alone on the line above would lose its target."""
    if line > 1 and line - 1 in source.open_ended:
        return False
    alone = _alone_comment(source, line - 1)
    if alone is not None and _suppressions(alone.string):
        return False
    body = source.bodies[line - 1]
    indent = body[: len(body) - len(body.lstrip(" \t\f"))]
    source.above[line] = indent + _new_comment(codes, tail)
    return True


def _alone_comment(source: _Source, line: int) -> tokenize.TokenInfo | None:
    """The comment of `line` if nothing but whitespace precedes it (it covers the next line)."""
    comment = source.comments.get(line)
    if comment is None or source.bodies[line - 1][: comment.start[1]].strip():
        return None
    return comment


def _replace_comment(
    source: _Source, comment: tokenize.TokenInfo, new: str, codes: Sequence[str]
) -> bool:
    """Replace `comment` by `new` if `suppression.find` reads in it every suppression it read
    in `comment` (but an empty one, which `codes` fill), and `codes` as jaxfix suppressions;
    False (nothing changed) otherwise."""
    before = _suppressions(comment.string) - {("", True)}
    after = _suppressions(new)
    if not before <= after or not {(code, True) for code in codes} <= after:
        return False
    (line, start), (_, end) = comment.start, comment.end
    body = source.bodies[line - 1]
    source.bodies[line - 1] = body[:start] + new + body[end:]
    return True


def _suppressions(comment: str) -> set[tuple[str, bool]]:
    """What `suppression.find` reads in a comment that concerns jaxfix, as (selector, is a
    jaxfix comment) pairs: another linter's `noqa` code (`E501`) does not."""
    found = suppression.find(comment)
    return {(s.selector, s.own) for s in found if s.own or s.selector.upper().startswith("JF")}


def _new_comment(codes: Sequence[str], tail: str) -> str:
    return f"# jaxfix: ignore[{', '.join(codes)}]{tail}"
