"""Rendering findings, diffs and summaries for the terminal."""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass

import click

from jaxfix.models.cells import CellMap
from jaxfix.models.diagnostic import Diagnostic, FixSafety


def finding_line(path: str, diagnostic: Diagnostic, cells: CellMap | None = None) -> str:
    """`path:line:col: CODE message`, 1-based, with `[*]` when a fix exists (`path:cell
    N:line:col` in a notebook, whose cells `cells` maps)."""
    marker = " [*]" if diagnostic.fix_safety is not None else ""
    return f"{path}:{position(diagnostic, cells)}: {diagnostic.code} {diagnostic.message}{marker}"


def position(diagnostic: Diagnostic, cells: CellMap | None) -> str:
    """`line:col` of where the finding starts, 1-based; `cell N:line:col` in a notebook."""
    column = diagnostic.column + 1
    if cells is None:
        return f"{diagnostic.line}:{column}"
    return cells.label(diagnostic.line, column)


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
    unsafe_fixable: int = 0
    changed_files: int = 0

    def count_remaining(self, diagnostics: Sequence[Diagnostic]) -> None:
        self.remaining += len(diagnostics)
        for diagnostic in diagnostics:
            if diagnostic.fix_safety is FixSafety.SAFE:
                self.safe_fixable += 1
            elif diagnostic.fix_safety is FixSafety.UNSAFE:
                self.unsafe_fixable += 1


def plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def check_summary(tally: Tally, unsafe_fixes: bool) -> str:
    """E.g. `Checked 4 files: 3 findings, 2 fixable with `jaxfix apply --unsafe-fixes`.`"""
    text = f"Checked {plural(tally.files, 'file')}: {plural(tally.remaining, 'finding')}"
    safe, unsafe = tally.safe_fixable, tally.unsafe_fixable
    if unsafe_fixes and safe + unsafe:
        text += f", {safe + unsafe} fixable with `jaxfix apply --unsafe-fixes`"
    elif safe:
        text += f", {safe} fixable with `jaxfix apply`"
        if unsafe:
            text += f" ({unsafe} more with `--unsafe-fixes`)"
    elif unsafe:
        text += f", {unsafe} fixable with `jaxfix apply --unsafe-fixes`"
    return text + _errors(tally) + "."


def apply_summary(tally: Tally, unsafe_fixes: bool, dry_run: bool) -> str:
    """E.g. `Checked 4 files: fixed 2 findings in 1 file, 1 remaining.`"""
    verb = "would fix" if dry_run else "fixed"
    text = (
        f"Checked {plural(tally.files, 'file')}: {verb} {plural(tally.fixed, 'finding')}"
        f" in {plural(tally.changed_files, 'file')}, {tally.remaining} remaining"
    )
    if tally.unsafe_fixable and not unsafe_fixes:
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
