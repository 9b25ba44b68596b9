"""`jaxfix.fixes.metadata` gives exactly what LibCST's own scope and expression-context providers
give, so the rules and fixes read its scopes as if they were LibCST's; its wrapper resolves what
LibCST's does."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import libcst as cst
import pytest
from hypothesis import given
from libcst._metadata_dependent import LazyValue
from libcst.metadata import (
    BaseMetadataProvider,
    ExpressionContextProvider,
    MetadataWrapper,
    PositionProvider,
    QualifiedNameProvider,
    Scope,
    ScopeProvider,
)

from jaxfix.fixes import metadata
from jaxfix.fixes.metadata import Wrapper
from jaxfix.proofs.cases import load_cases
from tests.test_fuzz import GRAMMAR_PROGRAMS, fuzz_settings

ROOT = Path(__file__).resolve().parent.parent
SOURCES = sorted(
    {case.directory / "before.py" for case in load_cases()[::3]}  # every rule's among them
    | set((ROOT / "examples" / "project").rglob("*.py"))
)


def described(scope: Scope | None) -> object:
    """What the rules read of a scope: its kind, its bindings and the reads of each, with the
    order LibCST gives them (`_index`: which bindings a read can see)."""
    if scope is None:
        return None
    return (
        type(scope).__name__,
        sorted(
            (a.name, type(a).__name__, id(getattr(a, "node", None)), getattr(a, "_index", None))
            for a in scope.assignments
        ),
        sorted(
            (a.node.value if isinstance(a.node, cst.Name) else "", id(a.node), a._index)
            for a in scope.accesses
        ),
    )


def evaluated(metadata: Mapping[cst.CSTNode, object]) -> dict[cst.CSTNode, object]:
    """The metadata, lazy values computed."""
    return {n: v() if isinstance(v, LazyValue) else v for n, v in metadata.items()}


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_the_same_metadata_as_libcst(path: Path) -> None:
    module = cst.parse_module(path.read_text(encoding="utf-8"))
    libcsts = MetadataWrapper(module, unsafe_skip_copy=True)
    ours = Wrapper(module, unsafe_skip_copy=True)
    theirs, fast = libcsts.resolve(ScopeProvider), ours.resolve(ScopeProvider)
    assert fast.keys() == theirs.keys()
    pairs = {(id(fast[node]), id(theirs[node])): node for node in theirs}
    assert len(pairs) == len({id(scope) for scope in theirs.values()})  # the same partition
    assert all(described(fast[node]) == described(theirs[node]) for node in pairs.values())
    for provider in (ExpressionContextProvider, PositionProvider, QualifiedNameProvider):
        assert evaluated(ours.resolve(provider)) == evaluated(libcsts.resolve(provider)), provider


# Code whose positions LibCST's code generation takes care over: line endings, continuations,
# strings over several lines, decorators, statements sharing a line, wide characters.
TRICKY = [
    "x = 1\r\ny = (2,\r\n     3)\r\n",
    "x = 1\ry = 2\r",
    "total = 1 + \\\n    2\n",
    's = """a\nb\r\nc"""\nt = f"{s!r:>{10}}" \'d\'\n',
    "@a.b(c)\n# comment\n@d\nasync def f(x, /, *, y=1) -> 'T':\n    return [i async for i in x]\n",
    "a = 1; b = 2;\nif a: b = 3\nelse: pass\n",
    "名前 = '値'  # 注\nclass C(名前, metaclass=M): x: int = lambda: (yield)\n",
    "with (open(a) as b, c):\n    match b:\n        case [1, *r] if r: pass\n",
]


def _same_positions(text: str) -> None:
    module = cst.parse_module(text)
    ours = Wrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    assert ours == MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)


@pytest.mark.parametrize("text", TRICKY)
def test_the_same_positions_as_libcst_on_tricky_code(text: str) -> None:
    _same_positions(text)


@fuzz_settings(20)
@given(GRAMMAR_PROGRAMS)
def test_the_same_positions_as_libcst_on_grammar_programs(text: str) -> None:
    try:
        cst.parse_module(text)
    except cst.ParserSyntaxError:
        return  # Hypothesmith's grammar is wider than LibCST's parser
    _same_positions(text)


def test_scopes_and_positions_take_no_batched_traversal(monkeypatch: pytest.MonkeyPatch) -> None:
    batches: list[object] = []

    def batch(*args: object) -> dict[object, object]:
        batches.append(args)
        return {}

    monkeypatch.setattr(metadata, "_gen_batchable", batch)
    wrapper = Wrapper(cst.parse_module("import jax\n\ndef f(x):\n    return jax.jit(f)(x)\n"))
    wrapper.resolve_many([ScopeProvider, PositionProvider])
    assert batches == []
    scopes = {scope for scope in wrapper.resolve(ScopeProvider).values() if scope is not None}
    assert {a.name for scope in scopes for a in scope.assignments} == {"jax", "f", "x"}


class _Egg(BaseMetadataProvider[None]):
    pass


class _Hen(BaseMetadataProvider[None]):
    METADATA_DEPENDENCIES = (_Egg,)


_Egg.METADATA_DEPENDENCIES = (_Hen,)


def test_circular_dependencies_are_an_error_as_in_libcst() -> None:
    with pytest.raises(cst.MetadataException, match="circular dependencies in _Egg, _Hen"):
        Wrapper(cst.parse_module("x = 1\n")).resolve(_Hen)
