"""`jaxfix.scopes` gives exactly what LibCST's own scope and expression-context providers give:
the rules and fixes read its scopes as if they were LibCST's."""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import pytest
from libcst.metadata import ExpressionContextProvider, MetadataWrapper, Scope, ScopeProvider

from jaxfix.proofs import load_cases
from jaxfix.scopes import FastExpressionContextProvider, FastScopeProvider

ROOT = Path(__file__).resolve().parent.parent
SOURCES = sorted(
    {case.directory / "before.py" for case in load_cases()[::3]}  # every rule's among them
    | set((ROOT / "examples" / "project").rglob("*.py"))
)


def described(scope: Scope | None) -> object:
    """What the rules read of a scope: its kind, its bindings and the reads of each."""
    if scope is None:
        return None
    return (
        type(scope).__name__,
        sorted((a.name, type(a).__name__, id(getattr(a, "node", None))) for a in scope.assignments),
        sorted(
            (a.node.value if isinstance(a.node, cst.Name) else "", id(a.node))
            for a in scope.accesses
        ),
    )


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_the_same_scopes_and_contexts_as_libcst(path: Path) -> None:
    wrapper = MetadataWrapper(cst.parse_module(path.read_text(encoding="utf-8")))
    theirs = wrapper.resolve(ScopeProvider)
    ours = wrapper.resolve(FastScopeProvider)
    assert ours.keys() == theirs.keys()
    pairs = {(id(ours[node]), id(theirs[node])): node for node in theirs}
    assert len(pairs) == len({id(scope) for scope in theirs.values()})  # the same partition
    assert all(described(ours[node]) == described(theirs[node]) for node in pairs.values())
    assert dict(wrapper.resolve(FastExpressionContextProvider)) == dict(
        wrapper.resolve(ExpressionContextProvider)
    )
