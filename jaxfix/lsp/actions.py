"""The code actions of a document: a quick fix for each fixable finding (safe fixes preferred,
unsafe ones never), "Suppress JFxxx on this line", and fix-all (`source.fixAll.jaxfix`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from lsprotocol import types

from jaxfix.lsp import convert
from jaxfix.lsp.positions import LineIndex
from jaxfix.models.diagnostic import Diagnostic, FixSafety
from jaxfix.models.edits import line_edits
from jaxfix.rules.suppression import UNUSED_CODE
from jaxfix.run.add_ignore import add_suppressions

FIX_ALL = f"{types.CodeActionKind.SourceFixAll.value}.jaxfix"
QUICK_FIX = types.CodeActionKind.QuickFix.value
KINDS = (QUICK_FIX, FIX_ALL)


@dataclass(frozen=True)
class Target:
    """The document version the actions edit, and how its findings are shown."""

    uri: str
    version: int | None
    index: LineIndex
    severity: types.DiagnosticSeverity
    versioned: bool  # the client takes versioned `documentChanges`

    def edit(self, new_text: str) -> types.WorkspaceEdit:
        """The workspace edit that turns the document's text into `new_text`."""
        edits = convert.text_edits(line_edits(self.index.text, new_text), self.index)
        return convert.workspace_edit(self.uri, self.version, edits, self.versioned)

    def shown(self, found: Diagnostic) -> types.Diagnostic:
        return convert.diagnostic(found, self.index, self.severity)


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
    """The findings whose range shares a position with `where`."""
    return [d for d in findings if overlaps(target.shown(d).range, where)]


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
    own = {target.uri: (target.version, convert.text_edits(found.edits, target.index))}
    documents = {**(own if found.edits else {}), **(elsewhere or {})}
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
