"""Notebook documents in the editor: the code cells read as one Python text, as `jaxfix check
nb.ipynb` reads them (a cell sees what earlier cells define), its findings shown in the cells
they are in, and a new text of the whole made into edits of the cells it changes."""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

import attrs
from lsprotocol import types

from jaxfix.lsp import convert
from jaxfix.lsp.positions import LineIndex
from jaxfix.models.edits import line_edits
from jaxfix.run.notebook import CodeCells, code_cells

# Where the edits of a change go: by document URI, its version and its edits.
DocumentEdits = dict[str, tuple[int | None, Sequence[types.TextEdit]]]


@dataclass(frozen=True)
class CellText:
    """One code cell as the editor has it."""

    uri: str
    version: int | None
    text: str


@dataclass(frozen=True)
class NotebookText:
    """An open notebook's code cells, in order, and their Python read as one text."""

    uri: str
    version: int
    cells: tuple[CellText, ...]

    @cached_property
    def code(self) -> CodeCells:
        return code_cells([cell.text for cell in self.cells])

    @cached_property
    def text(self) -> str:
        return self.code.python

    @cached_property
    def _starts(self) -> list[int]:
        """The 0-based line of the whole text where each cell starts."""
        starts, line = [], 0
        for cell in self.code.cells:
            starts.append(line)
            line += len(cell.lines)
        return starts

    def cell_at(self, line: int) -> int:
        """The index of the cell holding a 0-based line of the whole text (an empty cell holds
        none: the next one that is not empty starts at the same line)."""
        return max(bisect.bisect_right(self._starts, line) - 1, 0)

    def start_of(self, cell_uri: str) -> int | None:
        """The line of the whole text where a cell starts; None when it is not a code cell."""
        for cell, start in zip(self.cells, self._starts, strict=True):
            if cell.uri == cell_uri:
                return start
        return None

    def in_cell(self, shown: types.Diagnostic) -> tuple[str, types.Diagnostic]:
        """A diagnostic of the whole text as its cell shows it: that cell's URI, and the
        range moved into it (cut at the cell's end); its related places of the notebook
        moved into theirs."""
        uri, moved = self.place(shown.range)
        related = [
            types.DiagnosticRelatedInformation(
                types.Location(*self.place(r.location.range)), r.message
            )
            if r.location.uri == self.uri
            else r
            for r in shown.related_information or ()
        ]
        return uri, attrs.evolve(shown, range=moved, related_information=related or None)

    def place(self, where: types.Range) -> tuple[str, types.Range]:
        """A range of the whole text as a cell's: the cell's URI, the range moved into it
        (cut at the cell's end)."""
        at = self.cell_at(where.start.line)
        start = self._starts[at]
        last = start + max(len(self.code.cells[at].lines) - 1, 0)
        end = where.end
        if end.line > last:
            end = types.Position(last + 1, 0)
        moved = types.Range(
            types.Position(where.start.line - start, where.start.character),
            types.Position(end.line - start, end.character),
        )
        return self.cells[at].uri, moved

    def by_cell(self, shown: Sequence[types.Diagnostic]) -> dict[str, list[types.Diagnostic]]:
        """Each code cell's diagnostics (none for a clean cell: that clears what it showed)."""
        result: dict[str, list[types.Diagnostic]] = {cell.uri: [] for cell in self.cells}
        for diagnostic in shown:
            uri, moved = self.in_cell(diagnostic)
            result[uri].append(moved)
        return result

    def edits(self, new_text: str, encoding: str) -> DocumentEdits:
        """The edits of each cell that changes when the whole text becomes `new_text`."""
        result: DocumentEdits = {}
        for cell, source in zip(self.cells, self.code.split(new_text), strict=True):
            if source != cell.text:
                index = LineIndex(cell.text, encoding)
                result[cell.uri] = (
                    cell.version,
                    convert.text_edits(line_edits(cell.text, source), index),
                )
        return result
