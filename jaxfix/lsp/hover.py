"""Hover on a finding: the documentation of its rule (what `jaxfix explain CODE` prints)."""

from __future__ import annotations

from collections.abc import Sequence

from lsprotocol import types

from jaxfix.lsp.actions import overlaps
from jaxfix.lsp.positions import LineIndex
from jaxfix.models.diagnostic import Diagnostic
from jaxfix.report.docs import rule_doc
from jaxfix.rules.registry import find_rule


def hover(
    findings: Sequence[Diagnostic], index: LineIndex, at: types.Position, markdown: bool
) -> types.Hover | None:
    """The docs of the rules of the findings at `at`, once each; None where there is none."""
    point = types.Range(at, at)
    ranges = [index.range(d.line, d.column, d.end_line, d.end_column) for d in findings]
    here = [(d, r) for d, r in zip(findings, ranges, strict=True) if overlaps(r, point)]
    rules = [rule for rule in dict.fromkeys(find_rule(d.code) for d, _ in here) if rule]
    if not rules:
        return None
    kind = types.MarkupKind.Markdown if markdown else types.MarkupKind.PlainText
    docs = "\n---\n\n".join(rule_doc(rule) for rule in rules)
    return types.Hover(contents=types.MarkupContent(kind=kind, value=docs), range=here[0][1])
