"""What a fix is: replacements of a file's LibCST nodes (made by `ReplaceNodes`), the imports
they need, and what the fix planners (`hoist`, `after_call`, `host_effects`) need of the rule
whose finding they fix (`FixingRule`). The rules sit above the fixes: `jaxfix.rules.rule.Rule`
is a `FixingRule`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import libcst as cst

from jaxfix.fixes.traversal import children
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
    def hoist_title(self) -> str | None: ...

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


class ReplaceNodes(cst.CSTTransformer):
    """Replace nodes (the originals, by identity) with what `replacements` gives them.

    Only the nodes above a replaced one are entered and rebuilt: the rest of the tree stays the
    same objects (a LibCST visit would rebuild and validate every node, most of a fix's time)."""

    def __init__(self, replacements: Mapping[cst.CSTNode, Replacement]) -> None:
        super().__init__()
        self.replacements = replacements
        self._above: set[cst.CSTNode] | None = None  # known at the first node visited

    def on_visit(self, node: cst.CSTNode) -> bool:
        if self._above is None:
            self._above = _above(node, self.replacements)
        return node in self._above

    def on_leave(  # type: ignore[override]
        self, original_node: cst.CSTNode, updated_node: cst.CSTNode
    ) -> Replacement:
        return self.replacements.get(original_node, updated_node)


def _above(root: cst.CSTNode, wanted: Mapping[cst.CSTNode, object]) -> set[cst.CSTNode]:
    """The nodes of `root`'s tree (`root` included) that hold a node of `wanted` below them."""
    found: set[cst.CSTNode] = set()
    path: list[cst.CSTNode] = []
    todo: list[tuple[cst.CSTNode, int]] = [(root, 0)]
    while todo:
        node, depth = todo.pop()
        del path[depth:]
        if node in wanted:
            found.update(path)
        path.append(node)
        todo.extend((child, depth + 1) for child in children(node))
    return found
