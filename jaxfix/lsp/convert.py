"""jaxfix findings and text edits as LSP values.

A fix comes as whole-line edits; each is narrowed to the characters that change (the common
start and end of the old and new text are left alone), so an editor keeps its cursor, folds
and marks everywhere else.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from lsprotocol import types

from jaxfix.lsp.positions import LineIndex
from jaxfix.models.diagnostic import Diagnostic, TextEdit
from jaxfix.report.docs import rule_url
from jaxfix.rules.registry import find_rule
from jaxfix.rules.suppression import UNUSED_CODE

SOURCE = "jaxfix"


def diagnostic(
    found: Diagnostic, index: LineIndex, severity: types.DiagnosticSeverity, uri: str
) -> types.Diagnostic:
    """`found` as the editor shows it: the rule code, a link to its docs, our name, and the
    other places of its object (`Diagnostic.related`) as related information."""
    rule = find_rule(found.code)
    related = [
        types.DiagnosticRelatedInformation(
            location=types.Location(uri, index.range(line, column, line, column)),
            message=f"also here: {found.code}",
        )
        for line, column in found.related
    ]
    return types.Diagnostic(
        range=index.range(found.line, found.column, found.end_line, found.end_column),
        message=f"{found.message}\n{found.note}" if found.note else found.message,
        severity=severity,
        code=found.code,
        code_description=types.CodeDescription(href=rule_url(rule)) if rule else None,
        source=SOURCE,
        tags=[types.DiagnosticTag.Unnecessary] if found.code == UNUSED_CODE else None,
        related_information=related or None,
    )


def text_edits(edits: Iterable[TextEdit], index: LineIndex) -> list[types.TextEdit]:
    """Edits of the text `index` holds, each narrowed to what changes, as LSP edits."""
    result = []
    for edit in edits:
        start, end, new_text = narrow(edit, index)
        line, column = index.location(start)
        end_line, end_column = index.location(end)
        result.append(
            types.TextEdit(index.range(line, column, end_line, end_column), new_text=new_text)
        )
    return result


def narrow(edit: TextEdit, index: LineIndex) -> tuple[int, int, str]:
    """The offsets of the text `edit` really changes, and what replaces them: `edit` without
    the start and end its old and new text share. A `\\r\\n` is never split."""
    text = index.text
    start = index.offset(edit.line, edit.column)
    end = index.offset(edit.end_line, edit.end_column)
    new = edit.new_text
    limit = min(end - start, len(new))
    prefix = 0
    while prefix < limit and text[start + prefix] == new[prefix]:
        prefix += 1
    if prefix and _inside_crlf(text, start + prefix):
        prefix -= 1
    suffix = 0
    while suffix < limit - prefix and text[end - 1 - suffix] == new[len(new) - 1 - suffix]:
        suffix += 1
    if suffix and _inside_crlf(text, end - suffix):
        suffix -= 1
    return start + prefix, end - suffix, new[prefix : len(new) - suffix]


def _inside_crlf(text: str, offset: int) -> bool:
    return 0 < offset < len(text) and text[offset - 1] == "\r" and text[offset] == "\n"


def workspace_edits(
    documents: Mapping[str, tuple[int | None, Sequence[types.TextEdit]]], versioned: bool
) -> types.WorkspaceEdit:
    """The edits of several documents (by URI, with the version they apply to) as one
    workspace edit, applied whole by the client."""
    if not versioned:
        return types.WorkspaceEdit(changes={uri: list(e) for uri, (_, e) in documents.items()})
    return types.WorkspaceEdit(
        document_changes=[
            types.TextDocumentEdit(
                text_document=types.OptionalVersionedTextDocumentIdentifier(uri=uri, version=v),
                edits=list(edits),
            )
            for uri, (v, edits) in documents.items()
        ]
    )


def workspace_edit(
    uri: str, version: int | None, edits: Sequence[types.TextEdit], versioned: bool
) -> types.WorkspaceEdit:
    """`edits` of one document; `versioned` (the client supports `documentChanges`) names the
    version they apply to, so that a client refuses them once the document changed."""
    return workspace_edits({uri: (version, edits)}, versioned)
