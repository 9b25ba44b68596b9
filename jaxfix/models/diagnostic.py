"""A finding in plain values: what the engine reports, workers send back and the cache keeps.

Free of LibCST, so that a run answered from the cache never imports it.
"""

from __future__ import annotations

import dataclasses
import enum
import re
from dataclasses import dataclass, field
from typing import Protocol


class FixSafety(enum.Enum):
    """How much a fix may change what working code does (Ruff's model)."""

    SAFE = "safe"  # only the failure goes away
    UNSAFE = "unsafe"  # behaviour changes in a way a person should review

    def applies(self, unsafe_fixes: bool) -> bool:
        """Whether `apply` applies a fix of this safety (`--unsafe-fixes` adds the unsafe)."""
        return self is FixSafety.SAFE or unsafe_fixes


class AttachedFix(Protocol):
    """What a finding tells of its fix in plain values; the fix itself (`jaxfix.fixes.fix.Fix`)
    holds the LibCST nodes it replaces, which the models know nothing of."""

    @property
    def title(self) -> str: ...

    @property
    def safety(self) -> FixSafety: ...

    @property
    def moves(self) -> str: ...

    @property
    def part_of(self) -> str: ...


@dataclass(frozen=True)
class TextEdit:
    """Replace the text from (line, column) up to (end_line, end_column) by `new_text`.

    Lines are 1-based and columns 0-based code points, as in `Diagnostic`; an insertion has an
    empty range, a deletion an empty `new_text`."""

    line: int
    column: int
    end_line: int
    end_column: int
    new_text: str


# The longest message: a longer one is cut after the reason its function is traced, the rest
# being the finding's note (`split_message`); the rule's docs (`jaxfix explain`) say more.
MESSAGE_LIMIT = 160
# How a message names why its function is traced (`jaxfix.analysis.reasons.Via`), in
# parentheses: what a long message is cut after.
_REASON = re.compile(
    r"\((?:decorated with|passed to|called from traced|a method of a|a custom derivative rule"
    r"|applied to traced values)[^()]*(?:\([^()]*\)[^()]*)*\)"
)


def split_message(message: str) -> tuple[str, str]:
    """A message of at most `MESSAGE_LIMIT` characters (what is wrong, where, and why the
    function is traced) and the note that says the rest, for a longer one."""
    if len(message) <= MESSAGE_LIMIT:
        return message, ""
    reason = _REASON.search(message)
    if reason is None:
        return message, ""
    return message[: reason.end()], message[reason.end() :].lstrip(":;, ")


@dataclass(frozen=True)
class Diagnostic:
    """One finding: where, which rule, what is wrong, and the fix if there is one.

    `fix` holds LibCST nodes of the tree it was found in; `fix_title` and `fix_safety` describe
    it in plain values, and stay when `portable()` drops it (for worker processes and the
    cache)."""

    code: str
    name: str
    message: str
    line: int  # 1-based
    column: int  # 0-based, in code points (LibCST convention)
    end_line: int
    end_column: int
    fix_title: str | None = None
    fix_safety: FixSafety | None = None
    # The fix as text edits of the whole file, in order, not overlapping (computed only when a
    # run asks for them: machine-readable outputs, `--show-fixes`, the interactive review).
    edits: tuple[TextEdit, ...] = ()
    # A fix over several files is one transaction: the finding's fix changes the calls of the
    # function `moves` in the other modules of the run (`module:function` once the run knows
    # the module), and a finding `part_of` one is no finding of its own but those changes in
    # this file, applied, shown and withheld with the finding whose fix it is part of.
    moves: str = ""
    part_of: str = ""
    # The other places of the same object (a memo dict's lookup and store besides this one):
    # (line, column) each, as `line` and `column`; one finding, not one per place.
    related: tuple[tuple[int, int], ...] = ()
    # What the finding says beyond its message (`message` is at most `MESSAGE_LIMIT`
    # characters, what is wrong and where): the advice, why it has no fix. "" for none.
    note: str = ""
    fix: AttachedFix | None = field(default=None, compare=False, repr=False)

    @property
    def place(self) -> tuple[str, int, int, int, int, str]:
        """What identifies the finding in one text, whatever its fix and edits: the same
        finding from another run over the text (a slice's, with or without edits)."""
        return (self.code, self.line, self.column, self.end_line, self.end_column, self.message)

    @property
    def full_message(self) -> str:
        """The message and its note, in one sentence."""
        return f"{self.message}; {self.note}" if self.note else self.message

    def with_fix(self, fix: AttachedFix | None) -> Diagnostic:
        """This finding with `fix` (or none) in place of its own."""
        return dataclasses.replace(
            self,
            fix=fix,
            fix_title=fix.title if fix else None,
            fix_safety=fix.safety if fix else None,
            moves=fix.moves if fix else "",
            part_of=fix.part_of if fix else "",
        )

    def portable(self) -> Diagnostic:
        """This finding without its LibCST fix: picklable, and cheap to keep."""
        return dataclasses.replace(self, fix=None) if self.fix is not None else self
