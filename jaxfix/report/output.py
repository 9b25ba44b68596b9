"""Rendering findings, diffs and summaries for the terminal."""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Sequence
from dataclasses import dataclass

import click

from jaxfix.models.cells import CellMap
from jaxfix.models.diagnostic import Diagnostic, FixSafety


def finding_line(
    path: str, diagnostic: Diagnostic, cells: CellMap | None = None, unsafe_fixes: bool = False
) -> str:
    """`path:line:col: CODE message`, 1-based, with `[*]` when `apply` makes its fix (an unsafe
    one only with `unsafe_fixes`) (`path:cell N:line:col` in a notebook, whose cells `cells`
    maps)."""
    marker = " [*]" if applied(diagnostic, unsafe_fixes) else ""
    return f"{path}:{position(diagnostic, cells)}: {diagnostic.code} {diagnostic.message}{marker}"


def applied(diagnostic: Diagnostic, unsafe_fixes: bool) -> bool:
    """Whether `apply` makes this finding's fix with unsafe fixes on or off: `[*]`."""
    safety = diagnostic.fix_safety
    return safety is not None and safety.applies(unsafe_fixes)


def position(diagnostic: Diagnostic, cells: CellMap | None) -> str:
    """`line:col` of where the finding starts, 1-based; `cell N:line:col` in a notebook."""
    return place(diagnostic.line, diagnostic.column, cells)


def place(line: int, column: int, cells: CellMap | None) -> str:
    """`line:col` of a 1-based line and 0-based column, 1-based; `cell N:line:col` in a
    notebook."""
    return f"{line}:{column + 1}" if cells is None else cells.label(line, column + 1)


def lines_before(before: str, after: str, diagnostics: Sequence[Diagnostic]) -> list[Diagnostic]:
    """Findings of the text `after` (the fixes applied), placed in the text `before` they
    were applied to (`apply --diff` writes nothing): a line the fixes kept is where it was
    before; a line they wrote is placed at the start of the lines it replaces."""
    matcher = difflib.SequenceMatcher(
        None, before.splitlines(keepends=True), after.splitlines(keepends=True), autojunk=False
    )
    blocks = matcher.get_opcodes()

    def moved(diagnostic: Diagnostic) -> Diagnostic:
        index = diagnostic.line - 1
        for tag, old, _, new, new_end in blocks:
            if new <= index < new_end or (new == new_end == index):
                if tag == "equal":
                    return dataclasses.replace(diagnostic, line=old + index - new + 1)
                return dataclasses.replace(diagnostic, line=old + 1)
        return diagnostic

    return [moved(d) for d in diagnostics]


def unified_diff(path: str, before: str, after: str, color: bool) -> str:
    """A unified diff of one file, colored for a terminal when asked."""
    lines = difflib.unified_diff(
        before.splitlines(keepends=True),
        after.splitlines(keepends=True),
        fromfile=f"a/{path}",
        tofile=f"b/{path}",
    )
    rendered: list[str] = []
    for line in lines:
        if not line.endswith(("\n", "\r")):
            line += "\n\\ No newline at end of file\n"
        if color:
            if line.startswith(("+++", "---")):
                line = click.style(line, bold=True)
            elif line.startswith("+"):
                line = click.style(line, fg="green")
            elif line.startswith("-"):
                line = click.style(line, fg="red")
            elif line.startswith("@@"):
                line = click.style(line, fg="cyan")
        rendered.append(line)
    return "".join(rendered)


@dataclass
class Tally:
    """Counts over a whole run, for the summary line and the exit code."""

    files: int = 0
    errors: int = 0
    fixed: int = 0
    remaining: int = 0
    safe_fixable: int = 0
    unsafe_applied: int = 0  # unsafe fixes `apply` makes: their files' settings allow them
    unsafe_fixable: int = 0  # unsafe fixes only `--unsafe-fixes` makes
    changed_files: int = 0

    def count_remaining(
        self, diagnostics: Sequence[Diagnostic], unsafe_fixes: bool = False
    ) -> None:
        """Count findings of a file whose settings make unsafe fixes or not (`unsafe_fixes`)."""
        self.remaining += len(diagnostics)
        for diagnostic in diagnostics:
            if diagnostic.fix_safety is FixSafety.SAFE:
                self.safe_fixable += 1
            elif diagnostic.fix_safety is FixSafety.UNSAFE and unsafe_fixes:
                self.unsafe_applied += 1
            elif diagnostic.fix_safety is FixSafety.UNSAFE:
                self.unsafe_fixable += 1


def plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def check_summary(tally: Tally, unsafe_fixes: bool) -> str:
    """E.g. `Checked 4 files: 3 findings, 2 fixable with `jaxfix apply --unsafe-fixes`.`: the
    fixes `apply` makes with the files' settings (the configuration's `unsafe-fixes` too), and
    those only `--unsafe-fixes` adds; `unsafe_fixes`: given on the command line."""
    text = f"Checked {plural(tally.files, 'file')}: {plural(tally.remaining, 'finding')}"
    fixable, more = tally.safe_fixable + tally.unsafe_applied, tally.unsafe_fixable
    if fixable:
        flag = " --unsafe-fixes" if unsafe_fixes else ""
        text += f", {fixable} fixable with `jaxfix apply{flag}`"
        if more:
            text += f" ({more} more with `--unsafe-fixes`)"
    elif more:
        text += f", {more} fixable with `jaxfix apply --unsafe-fixes`"
    return text + _errors(tally) + "."


def apply_summary(tally: Tally, unsafe_fixes: bool, dry_run: bool) -> str:
    """E.g. `Checked 4 files: fixed 2 findings in 1 file, 1 remaining.`"""
    verb = "would fix" if dry_run else "fixed"
    text = (
        f"Checked {plural(tally.files, 'file')}: {verb} {plural(tally.fixed, 'finding')}"
        f" in {plural(tally.changed_files, 'file')}, {tally.remaining} remaining"
    )
    if tally.unsafe_fixable:
        text += f" ({tally.unsafe_fixable} fixable with `--unsafe-fixes`)"
    return text + _errors(tally) + "."


def add_ignore_summary(tally: Tally, added: int) -> str:
    """E.g. `Added 3 suppressions in 2 files (5 checked), 0 remaining.`"""
    text = (
        f"Added {plural(added, 'suppression')} in {plural(tally.changed_files, 'file')}"
        f" ({tally.files} checked), {tally.remaining} remaining"
    )
    return text + _errors(tally) + "."


def _errors(tally: Tally) -> str:
    return f", {plural(tally.errors, 'error')}" if tally.errors else ""
