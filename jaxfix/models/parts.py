"""The part of a file that a later round across modules analyses (plain values, no syntax tree).

A file whose functions other modules' traced code calls is analysed again with those calls
(`jaxfix.run.batch`, `project.Entry`). What that analysis adds to the first round's depends on the
entered functions and on what they can reach by name: the top-level statements that define
them, the statements defining every name those mention (transitively, through function bodies
too), the statements using a kept `def` or class at the top level (`f.defjvp(rule)`: its rule
is traced with it) and the imports. In the benchmark's corpus that is two fifths of the bytes
analysed again.

The first round notes each file's `Outline` (its top-level statements' lines and which depend
on which, with what the whole module tells an analysis of a part of it); a later round's job
carries the `Part` to analyse, and the worker analyses the file's text with every other line
blanked, so that lines and columns are the file's own. A part that finds anything, or a file
the first round found anything in, is analysed whole: only the traced calls into other
modules come from a part, added to the first round's (`project.with_tree_facts`).
"""

from __future__ import annotations

import bisect
import re
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")
_END = sys.maxsize  # sorts after every last line of a span


@dataclass(frozen=True)
class WholeModule:
    """What the analysis reads from the whole module, given to the analysis of a part of it:
    the attribute names its pytree classes declare static, and the parameters that every call
    in the module gives an instance of one of its classes (function id -> (param, class))."""

    static_fields: tuple[str, ...] = ()
    instance_params: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = ()

    def plain(self) -> dict[str, Any]:
        return {
            "static_fields": list(self.static_fields),
            "instance_params": [[fid, [list(p) for p in ps]] for fid, ps in self.instance_params],
        }

    @classmethod
    def from_plain(cls, data: dict[str, Any]) -> WholeModule:
        return cls(
            tuple(data["static_fields"]),
            tuple(
                (str(fid), tuple((str(p), str(c)) for p, c in params))
                for fid, params in data["instance_params"]
            ),
        )


@dataclass(frozen=True)
class Part:
    """The lines of a file to analyse (first, last: 1-based, inclusive), and what the whole
    module tells their analysis."""

    lines: tuple[tuple[int, int], ...]
    whole: WholeModule = WholeModule()

    def text(self, text: str) -> str:
        """`text` with every line outside the part blank (an empty line)."""
        if "\r" not in text:  # lines end at `\n` alone: split by C code
            lines, blank, joiner = text.split("\n"), "", "\n"
        else:
            lines, blank, joiner = _LINE.findall(text), "\n", ""
        kept = [blank] * len(lines)
        for first, last in self.lines:
            kept[first - 1 : last] = lines[first - 1 : last]
        return joiner.join(kept)

    def keeps(self, line: int) -> bool:
        """Whether the part keeps the file's line `line`."""
        index = bisect.bisect_right(self.lines, (line, _END)) - 1
        return index >= 0 and self.lines[index][1] >= line

    def plain(self) -> dict[str, Any]:
        return {"lines": [list(span) for span in self.lines], "whole": self.whole.plain()}

    @classmethod
    def from_plain(cls, data: dict[str, Any]) -> Part:
        lines = tuple((int(first), int(last)) for first, last in data["lines"])
        return cls(lines, WholeModule.from_plain(data["whole"]))


@dataclass(frozen=True)
class Outline:
    """A file's top-level statements (as chunks of lines), the chunks to keep with each (see
    `jaxfix.analysis.firstpass.outline`), the chunks defining each top-level name another module can
    enter, and the import chunks (always kept)."""

    spans: tuple[tuple[int, int], ...]
    kept_with: tuple[tuple[int, ...], ...]
    defined: tuple[tuple[str, tuple[int, ...]], ...]
    imports: tuple[int, ...]
    whole: WholeModule = WholeModule()

    def part(self, functions: Iterable[str]) -> Part | None:
        """The part the entered `functions` need; None when it is the whole file."""
        defined = dict(self.defined)
        # A class's name, or `C[]` for a sequence of its instances (`declarations.ELEMENTS`).
        classes = {c.removesuffix("[]") for _, ps in self.whole.instance_params for _, c in ps}
        seeds = [
            *self.imports,
            *(i for name in {*functions, *classes} for i in defined.get(name, ())),
        ]
        kept: set[int] = set()
        while seeds:
            index = seeds.pop()
            if index not in kept:
                kept.add(index)
                seeds.extend(self.kept_with[index])
        if len(kept) == len(self.spans):
            return None
        return Part(_merged(self.spans[i] for i in sorted(kept)), self.whole)

    def plain(self) -> dict[str, Any]:
        return {
            "spans": [list(span) for span in self.spans],
            "kept_with": [list(chunks) for chunks in self.kept_with],
            "defined": [[name, list(chunks)] for name, chunks in self.defined],
            "imports": list(self.imports),
            "whole": self.whole.plain(),
        }

    @classmethod
    def from_plain(cls, data: dict[str, Any]) -> Outline:
        return cls(
            tuple((int(a), int(b)) for a, b in data["spans"]),
            tuple(tuple(int(i) for i in chunks) for chunks in data["kept_with"]),
            tuple((str(name), tuple(int(i) for i in chunks)) for name, chunks in data["defined"]),
            tuple(int(i) for i in data["imports"]),
            WholeModule.from_plain(data["whole"]),
        )


def _merged(spans: Iterable[tuple[int, int]]) -> tuple[tuple[int, int], ...]:
    """Adjacent spans (in order) as one."""
    merged: list[tuple[int, int]] = []
    for first, last in spans:
        if merged and first <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(merged[-1][1], last))
        else:
            merged.append((first, last))
    return tuple(merged)
