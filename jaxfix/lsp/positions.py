"""Positions between jaxfix and the editor.

jaxfix (like LibCST) counts lines from 1 and columns in code points; LSP counts lines from 0
and columns in the code units of the negotiated position encoding (UTF-16 unless the client
offers another). Both break lines at `\\n`, `\\r\\n` and `\\r` only.
"""

from __future__ import annotations

import bisect

from lsprotocol import types

from jaxfix.models.edits import line_starts, source_lines

UTF8 = types.PositionEncodingKind.Utf8
UTF16 = types.PositionEncodingKind.Utf16
UTF32 = types.PositionEncodingKind.Utf32


def code_units(text: str, encoding: str) -> int:
    """How many code units of `encoding` (an LSP position encoding) `text` takes."""
    if encoding == UTF32:
        return len(text)
    if encoding == UTF8:
        return len(text.encode("utf-8", "surrogatepass"))
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


class LineIndex:
    """One text's lines, to turn jaxfix positions and offsets into LSP positions."""

    def __init__(self, text: str, encoding: str = UTF16) -> None:
        self.text = text
        self.encoding = encoding
        self.lines = source_lines(text)
        self.bodies = [line.rstrip("\r\n") for line in self.lines]
        self.starts = line_starts(text)

    def position(self, line: int, column: int) -> types.Position:
        """The LSP position of 1-based `line`, code-point `column`; a column past the line's
        end is its end, a line past the text is the text's end."""
        index = line - 1
        if index >= len(self.lines):
            return self.end()
        body = self.bodies[index]
        return types.Position(index, code_units(body[: max(column, 0)], self.encoding))

    def range(self, line: int, column: int, end_line: int, end_column: int) -> types.Range:
        return types.Range(self.position(line, column), self.position(end_line, end_column))

    def end(self) -> types.Position:
        """Where the text ends: after its last line break, or at the end of its last line."""
        if not self.lines or self.bodies[-1] != self.lines[-1]:
            return types.Position(len(self.lines), 0)
        return types.Position(len(self.lines) - 1, code_units(self.bodies[-1], self.encoding))

    def offset(self, line: int, column: int) -> int:
        """The index in the text of 1-based `line`, code-point `column` (clamped to the text)."""
        if line > len(self.lines):
            return len(self.text)
        return min(self.starts[line - 1] + column, self.starts[line])

    def location(self, offset: int) -> tuple[int, int]:
        """The 1-based line and code-point column of index `offset` of the text."""
        index = bisect.bisect_right(self.starts, offset) - 1
        if index >= len(self.lines):
            return len(self.lines) + 1, 0
        return index + 1, offset - self.starts[index]
