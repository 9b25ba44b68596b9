"""Where the lines of a text made of several cells (a notebook's code cells, one after the
other) come from: the map that turns a line of the whole text into a cell and a line in it."""

from __future__ import annotations

import bisect
from dataclasses import dataclass


@dataclass(frozen=True)
class CellMap:
    """`starts[i]` is the first line (1-based) of the whole text that belongs to cell
    `numbers[i]` (1-based, counted as the text's reader counts them); increasing."""

    starts: tuple[int, ...]
    numbers: tuple[int, ...]

    def locate(self, line: int) -> tuple[int, int]:
        """The cell of a line of the whole text and the 1-based line in that cell."""
        at = max(bisect.bisect_right(self.starts, line) - 1, 0)
        if not self.starts:
            return 1, line
        return self.numbers[at], line - self.starts[at] + 1

    def label(self, line: int, column: int) -> str:
        """`cell N:line:column` for a 1-based line of the whole text and a 1-based column."""
        cell, in_cell = self.locate(line)
        return f"cell {cell}:{in_cell}:{column}"
