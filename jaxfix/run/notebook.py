"""Jupyter notebooks as one Python text: their code cells one after the other (so a cell sees
what earlier cells define), with a map from the text's lines back to cells, and the fixed text
split back into the cells of the same notebook, its outputs, execution counts and metadata kept.

IPython's own syntax (`%magic`, `!shell`, a cell under a `%%cell_magic`) is masked: such a line
becomes a comment (`#jaxfix-magic# %timeit f(x)`) of the same position, and is restored when the
text is split back. Only the notebook's JSON is read: no nbformat, no Jupyter.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from jaxfix.models.cells import CellMap

__all__ = ["MAGIC", "CodeCells", "Notebook", "NotebookError", "code_cells", "parse_notebook"]

MAGIC = "#jaxfix-magic# "  # the mask of a line of IPython syntax
NOTEBOOK_SUFFIX = ".ipynb"
_HELP = re.compile(r"[\w.]+\?{1,2}")


class NotebookError(ValueError):
    """Text that is not a notebook's JSON; the message is one line."""


@dataclass(frozen=True)
class Cell:
    """One code cell: where it is, and its source as masked Python lines."""

    index: int  # in the notebook's `cells`
    number: int  # 1-based, among the code cells (as positions name it: `cell 3`)
    lines: tuple[str, ...]  # each ends with a newline
    newline_at_end: bool  # whether its source ended with one
    as_list: bool  # its source was a list of lines (Jupyter's way), not one string


@dataclass(frozen=True)
class CodeCells:
    """Code cells read as one Python text, and that text's changes split back into them."""

    cells: tuple[Cell, ...]

    @property
    def python(self) -> str:
        """The code cells' Python, one after the other."""
        return "".join(line for cell in self.cells for line in cell.lines)

    @property
    def cell_map(self) -> CellMap:
        """Where each code cell's lines start in `python` (empty cells have none)."""
        starts: list[int] = []
        numbers: list[int] = []
        line = 1
        for cell in self.cells:
            if cell.lines:
                starts.append(line)
                numbers.append(cell.number)
                line += len(cell.lines)
        return CellMap(tuple(starts), tuple(numbers))

    def split(self, text: str) -> list[str]:
        """The source of each code cell once the whole Python text is `text`: a line kept
        stays in its cell, a changed one takes the cell of the line it replaces, a new one the
        cell of the line before it (the first cell at the top: imports go there)."""
        if not self.cells:
            return []
        owner = [n for n, cell in enumerate(self.cells) for _ in cell.lines]
        old = [line for cell in self.cells for line in cell.lines]
        new = text.splitlines(keepends=True)
        taken: list[list[str]] = [[] for _ in self.cells]
        first = next((n for n, cell in enumerate(self.cells) if cell.lines), 0)
        matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
        for tag, i1, i2, j1, j2 in matcher.get_opcodes():
            for k, line in enumerate(new[j1:j2]):
                if tag == "insert":
                    cell = owner[i1 - 1] if i1 > 0 else first
                else:
                    cell = owner[i1 + min(k, i2 - i1 - 1)]
                taken[cell].append(line)
        return [_restored(cell, lines) for cell, lines in zip(self.cells, taken, strict=True)]

    def cell_sources(self, text: str) -> list[tuple[int, str]]:
        """Each code cell's number and source once the whole Python text is `text`."""
        return [
            (cell.number, source) for cell, source in zip(self.cells, self.split(text), strict=True)
        ]


def code_cells(sources: Sequence[str]) -> CodeCells:
    """The code cells of these sources (an editor's notebook: each cell's text, in order)."""
    return CodeCells(
        tuple(
            Cell(
                index=n,
                number=n + 1,
                lines=_masked(s),
                newline_at_end=s.endswith("\n"),
                as_list=False,
            )
            for n, s in enumerate(sources)
        )
    )


@dataclass(frozen=True)
class Notebook(CodeCells):
    """A notebook's JSON text and its code cells."""

    json_text: str
    indent: int | str | None
    ensure_ascii: bool
    newline_at_end: bool

    def render(self, text: str) -> str:
        """The notebook's JSON once its Python is `text` (its own text when unchanged)."""
        if text == self.python:
            return self.json_text
        document = json.loads(self.json_text)
        for cell, source in zip(self.cells, self.split(text), strict=True):
            kept = document["cells"][cell.index]
            kept["source"] = source.splitlines(keepends=True) if cell.as_list else source
        dumped = json.dumps(document, indent=self.indent, ensure_ascii=self.ensure_ascii)
        return dumped + ("\n" if self.newline_at_end else "")


def parse_notebook(json_text: str) -> Notebook:
    """The notebook in `json_text`; NotebookError if it is not one."""
    try:
        document = json.loads(json_text)
    except json.JSONDecodeError as error:
        raise NotebookError(f"invalid notebook JSON: {error}") from error
    if not isinstance(document, dict) or not isinstance(document.get("cells"), list):
        raise NotebookError("not a notebook: no `cells` list")
    cells: list[Cell] = []
    for index, raw in enumerate(document["cells"]):
        if not isinstance(raw, dict):
            raise NotebookError(f"not a notebook: cell {index + 1} is not an object")
        if raw.get("cell_type") != "code":
            continue
        source = _source_text(raw.get("source", ""), index)
        cells.append(
            Cell(
                index=index,
                number=len(cells) + 1,
                lines=_masked(source),
                newline_at_end=source.endswith("\n"),
                as_list=isinstance(raw.get("source"), list),
            )
        )
    return Notebook(
        cells=tuple(cells),
        json_text=json_text,
        indent=_indent(json_text),
        ensure_ascii=json_text.isascii() and "\\u" in json_text,
        newline_at_end=json_text.endswith("\n"),
    )


def _source_text(source: Any, index: int) -> str:
    if isinstance(source, str):
        return source
    if isinstance(source, list) and all(isinstance(line, str) for line in source):
        return "".join(source)
    raise NotebookError(f"not a notebook: the source of cell {index + 1} is not text")


def _masked(source: str) -> tuple[str, ...]:
    """The cell's lines, each ending with a newline, with IPython's syntax masked."""
    lines = source.splitlines(keepends=True)
    if lines and not lines[-1].endswith(("\n", "\r")):
        lines[-1] += "\n"
    whole = bool(lines) and lines[0].lstrip().startswith("%%")
    return tuple(_mask(line) if whole or _is_magic(line) else line for line in lines)


def _is_magic(line: str) -> bool:
    """`%magic`, `!shell` or `name?` (IPython's help), which Python cannot parse."""
    stripped = line.strip()
    return stripped.startswith(("%", "!")) or bool(_HELP.fullmatch(stripped))


def _mask(line: str) -> str:
    stripped = line.lstrip()
    return line[: len(line) - len(stripped)] + MAGIC + stripped


def _restored(cell: Cell, lines: Sequence[str]) -> str:
    """A cell's source from its (masked) lines: IPython's syntax back, its last newline as
    the cell had it."""
    out = []
    for line in lines:
        stripped = line.lstrip()
        if stripped.startswith(MAGIC):
            line = line[: len(line) - len(stripped)] + stripped[len(MAGIC) :]
        out.append(line)
    source = "".join(out)
    if not cell.newline_at_end and source.endswith("\n"):
        source = source[:-1]
    return source


def _indent(json_text: str) -> int | str | None:
    """The indent of the JSON's second line: how it was written (Jupyter writes 1)."""
    first = json_text.find("\n")
    if first < 0:
        return None
    rest = json_text[first + 1 :]
    width = len(rest) - len(rest.lstrip(" \t"))
    if width == 0:
        return None
    run = rest[:width]
    return width if set(run) == {" "} else run
