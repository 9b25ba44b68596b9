"""The code actions of a document: a quick fix for each fixable finding (safe fixes preferred,
unsafe ones never), "Suppress JFxxx on this line", and fix-all (`source.fixAll.jaxfix`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from lsprotocol import types

from jaxfix.lsp import convert
from jaxfix.lsp.notebooks import DocumentEdits, NotebookText
from jaxfix.lsp.positions import LineIndex
from jaxfix.models.diagnostic import Diagnostic, FixSafety, TextEdit
from jaxfix.models.edits import apply_edits, line_edits
from jaxfix.rules.suppression import UNUSED_CODE
from jaxfix.run.add_ignore import add_suppressions

FIX_ALL = f"{types.CodeActionKind.SourceFixAll.value}.jaxfix"
QUICK_FIX = types.CodeActionKind.QuickFix.value
KINDS = (QUICK_FIX, FIX_ALL)


@dataclass(frozen=True)
class Target:
    """The document version the actions edit, and how its findings are shown. In a notebook
    the document is the Python of its code cells (`index` holds it), the actions are asked
    for in one cell, and their edits are edits of the cells."""

    uri: str
    version: int | None
    index: LineIndex
    severity: types.DiagnosticSeverity
    versioned: bool  # the client takes versioned `documentChanges`
    notebook: NotebookText | None = None
    cell: str | None = None  # the cell the actions are asked for, in a notebook

    def edit(self, new_text: str) -> types.WorkspaceEdit:
        """The workspace edit that turns the document's text into `new_text`."""
        return convert.workspace_edits(self.documents(new_text), self.versioned)

    def documents(self, new_text: str) -> DocumentEdits:
        """The edits, by document, that turn the text into `new_text`."""
        if self.notebook is not None:
            return self.notebook.edits(new_text, self.index.encoding)
        edits = convert.text_edits(line_edits(self.index.text, new_text), self.index)
        return {self.uri: (self.version, edits)}

    def own_edits(self, edits: Sequence[TextEdit]) -> DocumentEdits:
        """A fix's `edits` of the text, by document."""
        if self.notebook is not None:
            return self.documents(apply_edits(self.index.text, edits))
        return {self.uri: (self.version, convert.text_edits(edits, self.index))}

    def shown(self, found: Diagnostic) -> types.Diagnostic:
        return self.placed(found)[1]

    def placed(self, found: Diagnostic) -> tuple[str, types.Diagnostic]:
        """`found` as the editor shows it, and the document it is in: the target's own, or
        in a notebook the cell that holds it."""
        shown = convert.diagnostic(found, self.index, self.severity, self.uri)
        return (self.uri, shown) if self.notebook is None else self.notebook.in_cell(shown)


def wanted(kind: str, only: Sequence[str] | None) -> bool:
    """Whether a request for the kinds `only` (all when None) covers actions of `kind`:
    `source` covers `source.fixAll.jaxfix`."""
    # `k + "."`, not an f-string: a `CodeActionKind` formats as its name, not its value.
    return only is None or any(kind == k or kind.startswith(k + ".") for k in only)


def overlaps(a: types.Range, b: types.Range) -> bool:
    """Whether two ranges share a position (their ends included)."""
    return _key(a.start) <= _key(b.end) and _key(b.start) <= _key(a.end)


def _key(position: types.Position) -> tuple[int, int]:
    return position.line, position.character


def touching(
    findings: Sequence[Diagnostic], where: types.Range, target: Target
) -> list[Diagnostic]:
    """The findings of the document (or notebook cell) asked about whose range shares a
    position with `where`."""
    asked = target.cell or target.uri
    here = []
    for found in findings:
        document, shown = target.placed(found)
        if document == asked and overlaps(shown.range, where):
            here.append(found)
    return here


def with_fixes(here: Sequence[Diagnostic], fixed: Sequence[Diagnostic]) -> list[Diagnostic]:
    """The findings `here`, each replaced by its copy in `fixed` (with its fix's edits)."""
    by_place = {d.place: d for d in fixed}
    return [by_place.get(d.place, d) for d in here]


# For a fix over several files (`Diagnostic.moves`): the other documents' edits, by URI with
# their version (None when not open), or None when they are not known (no quick fix then).
Elsewhere = Mapping[str, tuple[int | None, Sequence[types.TextEdit]]]


def line_actions(
    here: Sequence[Diagnostic],
    target: Target,
    elsewhere: Callable[[Diagnostic], Elsewhere | None] = lambda found: {},
) -> list[types.CodeAction]:
    """The quick fixes of the findings `here` (those whose edits were computed), then one
    suppression for each code on each of their lines."""
    fixes = [
        action
        for d in here
        if (others := elsewhere(d)) is not None
        and (action := quick_fix(d, target, others)) is not None
    ]
    suppressions: dict[tuple[int, str], types.CodeAction] = {}
    for d in here:
        if (d.line, d.code) not in suppressions and (action := suppress(d, target)) is not None:
            suppressions[d.line, d.code] = action
    return fixes + list(suppressions.values())


def quick_fix(
    found: Diagnostic, target: Target, elsewhere: Elsewhere | None = None
) -> types.CodeAction | None:
    """`found`'s fix (its edits must have been computed), preferred only when it is safe;
    with the edits it makes in other documents (`elsewhere`), in the same workspace edit (a
    fix may make all its edits there: the move of a helper's calls in its callers' files)."""
    if found.fix_safety is None or not (found.edits or elsewhere):
        return None
    documents = {**(target.own_edits(found.edits) if found.edits else {}), **(elsewhere or {})}
    title = f"jaxfix ({found.code}): {found.fix_title}"
    if elsewhere:
        title += f" (and {len(elsewhere)} other file{'s' if len(elsewhere) > 1 else ''})"
    return types.CodeAction(
        title=title,
        kind=QUICK_FIX,
        diagnostics=[target.shown(found)],
        edit=convert.workspace_edits(documents, target.versioned),
        is_preferred=found.fix_safety is FixSafety.SAFE,
    )


def suppress(found: Diagnostic, target: Target) -> types.CodeAction | None:
    """A `# jaxfix: ignore[CODE]` for `found`'s line, where one can go (not for JF001: an
    unused suppression is removed, not suppressed)."""
    if found.code == UNUSED_CODE:
        return None
    new_text, skipped = add_suppressions(target.index.text, [found])
    if skipped or new_text == target.index.text:
        return None
    return types.CodeAction(
        title=f"Suppress {found.code} on this line",
        kind=QUICK_FIX,
        diagnostics=[target.shown(found)],
        edit=target.edit(new_text),
    )


def fix_all(new_text: str, target: Target) -> types.CodeAction:
    """The action that applies every safe fix: `new_text` is the document with them."""
    return types.CodeAction(
        title="jaxfix: Apply all safe fixes", kind=FIX_ALL, edit=target.edit(new_text)
    )
