"""What a fix is: replacements of a file's LibCST nodes, the imports they need, and what the
fix planners (`hoist`, `after_call`, `host_effects`) need of the rule whose finding they fix
(`FixingRule`). The rules sit above the fixes: `jaxfix.rules.rule.Rule` is a `FixingRule`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import libcst as cst

from jaxfix.models.diagnostic import Diagnostic, FixSafety

if TYPE_CHECKING:
    from jaxfix.fixes.tracing import TracedAnalysis

Replacement = cst.CSTNode | cst.FlattenSentinel[cst.CSTNode] | cst.RemovalSentinel


@dataclass(frozen=True)
class ImportNeeded:
    """An import the fixed code relies on: `import module` or `from module import obj`."""

    module: str
    obj: str | None = None


@dataclass(frozen=True)
class Fix:
    """Replacements of original nodes, plus the import changes they imply."""

    title: str
    safety: FixSafety
    replacements: Mapping[cst.CSTNode, Replacement]
    imports_needed: Sequence[ImportNeeded] = ()
    # Nodes the fix deletes: imports only they used are removed when no longer referenced.
    removed_nodes: Sequence[cst.CSTNode] = ()
    # See `Diagnostic.moves` and `Diagnostic.part_of`: a fix over several files.
    moves: str = ""
    part_of: str = ""


class FixingRule(Protocol):
    """The rule a fix planner works for: its analysis of the file, its code and titles, the
    findings it made, and how it makes and reports a fix."""

    @property
    def code(self) -> str: ...

    @property
    def fix_title(self) -> str: ...

    @property
    def after_call_title(self) -> str | None: ...

    @property
    def traced(self) -> TracedAnalysis: ...

    @property
    def diagnostics(self) -> list[Diagnostic]: ...

    def report(
        self, node: cst.CSTNode, message: str | None = None, fix: Fix | None = None
    ) -> None: ...

    def make_fix(
        self,
        replacements: Mapping[cst.CSTNode, Replacement],
        imports_needed: Sequence[ImportNeeded] = (),
        removed_nodes: Sequence[cst.CSTNode] = (),
        title: str | None = None,
    ) -> Fix: ...
