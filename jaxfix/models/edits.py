"""Text edits between two versions of a file: how a fix is shown in JSON, SARIF and the editor,
and how one fix is applied on its own (the interactive review)."""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence

from jaxfix.models.diagnostic import TextEdit

# Which findings get their fix as text edits: all (True), none (False), or those that start on
# one of a set of lines (an editor asks for the fixes under its cursor).
EditsWanted = bool | frozenset[int]

# Python's line breaks (what LibCST and the tokenizer count), not all of `str.splitlines`'.
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")


def source_lines(text: str) -> list[str]:
    """`text` split after each `\\n`, `\\r\\n` or `\\r`, line ends kept."""
    return _LINE.findall(text)


def line_edits(before: str, after: str) -> tuple[TextEdit, ...]:
    """Whole-line edits that turn `before` into `after`: one per changed run of lines."""
    old = source_lines(before)
    new = source_lines(after)
    # The lines both texts start and end with are left out of the diff, which is quadratic in
    # the worst case: a fix changes a few lines of a long file.
    head = _common_length(old, new)
    tail = min(_common_length(old[::-1], new[::-1]), len(old) - head, len(new) - head)
    matcher = difflib.SequenceMatcher(
        None, old[head : len(old) - tail], new[head : len(new) - tail], autojunk=False
    )
    edits: list[TextEdit] = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        line, column = _position(old, head + i1)
        end_line, end_column = _position(old, head + i2)
        new_text = "".join(new[head + j1 : head + j2])
        edits.append(TextEdit(line, column, end_line, end_column, new_text))
    return tuple(edits)


def _common_length(a: Sequence[str], b: Sequence[str]) -> int:
    """How many items `a` and `b` start with alike."""
    for index, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            return index
    return min(len(a), len(b))


def _position(lines: Sequence[str], index: int) -> tuple[int, int]:
    """The (line, column) where line `index` (0-based) of `lines` starts; past an unterminated
    last line, its end."""
    if index == len(lines) and lines and not lines[-1].endswith(("\n", "\r")):
        return len(lines), len(lines[-1])
    return index + 1, 0


def line_starts(text: str) -> list[int]:
    """The index in `text` where each of its lines starts, then `len(text)`."""
    starts = [0]
    for line in source_lines(text):
        starts.append(starts[-1] + len(line))
    return starts


def offset(starts: Sequence[int], line: int, column: int) -> int:
    """The index of (1-based `line`, code-point `column`) in the text of `line_starts`; past
    the last line, the end of the text."""
    return starts[-1] if line >= len(starts) else starts[line - 1] + column


def apply_edits(text: str, edits: Sequence[TextEdit]) -> str:
    """`text` with `edits` (not overlapping) applied."""
    starts = line_starts(text)
    result: list[str] = []
    done = 0
    for edit in sorted(edits, key=lambda e: (e.line, e.column)):
        start = offset(starts, edit.line, edit.column)
        end = offset(starts, edit.end_line, edit.end_column)
        if start < done:
            raise ValueError(f"overlapping edits at line {edit.line}")
        result += [text[done:start], edit.new_text]
        done = end
    result.append(text[done:])
    return "".join(result)
