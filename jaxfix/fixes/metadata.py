"""LibCST's metadata, without the traversals LibCST wastes.

A rule run needs positions and scopes. LibCST resolves metadata in rounds and ends every round
with a batched traversal of the whole module, even when the round has no batchable provider to
run (`_resolve_impl`): two traversals for nothing per run. `ScopeProvider` and the
`ExpressionContextProvider` it depends on are themselves batchable, but their only work is in
`visit_Module`, which walks the module with a visitor of its own: their batched traversals walk
every node again for nothing, and look their visitor methods up with `inspect.getmembers` each
time. Together that was two thirds of a rule run.

`Wrapper` resolves without empty rounds, and the providers here run LibCST's own visitors once
each, with the same results (tested against LibCST's providers). A `Wrapper` uses them for
LibCST's keys: ask for `ScopeProvider` as usual. Positions come from LibCST's own code
generation too, with a bookkeeping a third cheaper (`_Positions`).
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping
from types import MappingProxyType, TracebackType
from typing import Any

import libcst as cst
from libcst.metadata import (
    BaseMetadataProvider,
    BatchableMetadataProvider,
    CodePosition,
    CodeRange,
    ExpressionContext,
    ExpressionContextProvider,
    MetadataWrapper,
    PositionProvider,
    ScopeProvider,
)
from libcst.metadata.base_provider import ProviderT
from libcst.metadata.expression_context_provider import ExpressionContextVisitor
from libcst.metadata.position_provider import NEWLINE_RE, PositionProvidingCodegenState
from libcst.metadata.scope_provider import _ASSIGNMENT_LIKE_NODES, Scope, ScopeVisitor
from libcst.metadata.wrapper import _gen_batchable

from jaxfix.fixes.traversal import ReadOnlyVisitor


class Wrapper(MetadataWrapper):
    """A `MetadataWrapper` that resolves providers in dependency order, traverses the module in
    batch only for rounds with batchable providers, and computes LibCST's scopes and expression
    contexts with the providers below (under LibCST's keys too)."""

    def resolve_many(
        self, providers: Collection[ProviderT]
    ) -> Mapping[ProviderT, Mapping[cst.CSTNode, object]]:
        completed = set(self._metadata)
        remaining = _with_dependencies(providers) - completed
        while remaining:
            ready = {p for p in remaining if _dependencies(p) <= completed}
            if not ready:
                names = ", ".join(sorted(p.__name__ for p in remaining))
                raise cst.MetadataException(f"Detected circular dependencies in {names}")
            batchable = {p for p in ready if issubclass(p, BatchableMetadataProvider)}
            for provider in ready - batchable:
                self._metadata[provider] = _instance(self, provider)._gen(self)
            if batchable:
                self._metadata.update(_gen_batchable(self, [_instance(self, p) for p in batchable]))
            completed |= ready
            remaining -= ready
            for slow, fast in _FASTER.items():
                if fast in ready:
                    self._metadata[slow] = self._metadata[fast]
        return {provider: self._metadata[provider] for provider in providers}


def _dependencies(provider: ProviderT) -> set[ProviderT]:
    return {_FASTER.get(p, p) for p in provider.METADATA_DEPENDENCIES}


def _with_dependencies(providers: Collection[ProviderT]) -> set[ProviderT]:
    found: set[ProviderT] = set()
    todo = [_FASTER.get(p, p) for p in providers]
    while todo:
        provider = todo.pop()
        if provider not in found:
            found.add(provider)
            todo.extend(_dependencies(provider))
    return found


def _instance(wrapper: MetadataWrapper, provider: ProviderT) -> Any:
    return provider(wrapper._cache.get(provider)) if provider.gen_cache else provider()


class _ExpressionContextWalk(ReadOnlyVisitor, ExpressionContextVisitor):
    """LibCST's expression-context visitor, walking without rebuilding the tree."""


class _ScopeWalk(ReadOnlyVisitor, ScopeVisitor):
    """LibCST's scope visitor, walking without rebuilding the tree."""

    def on_leave(self, original_node: cst.CSTNode) -> None:
        """`ScopeVisitor.on_leave`, matching the assignment-like nodes by exact type (LibCST's
        node classes have no subclasses): its `isinstance` against eighteen classes goes
        through `ABCMeta` for each, on every node."""
        self.provider.set_metadata(original_node, self.scope)
        if type(original_node) in _ASSIGNMENT_LIKE:
            self.scope._assignment_count += 1
        ReadOnlyVisitor.on_leave(self, original_node)


_ASSIGNMENT_LIKE = frozenset(_ASSIGNMENT_LIKE_NODES)


class _ExpressionContexts(BaseMetadataProvider[ExpressionContext]):
    """`ExpressionContextProvider`'s metadata, from one walk."""

    def _gen_impl(self, module: cst.Module) -> None:
        module.visit(_ExpressionContextWalk(self, ExpressionContext.LOAD))  # type: ignore[arg-type]


class _Scopes(BaseMetadataProvider[Scope | None]):
    """`ScopeProvider`'s metadata, from one walk."""

    METADATA_DEPENDENCIES = (_ExpressionContexts,)

    def get_metadata(self, key: Any, node: cst.CSTNode, *default: Any) -> Any:
        """LibCST's scope visitor asks for `ExpressionContextProvider`: answer from ours."""
        if key is ExpressionContextProvider:
            key = _ExpressionContexts
        return super().get_metadata(key, node, *default)

    def _gen_impl(self, module: cst.Module) -> None:
        visitor = _ScopeWalk(self)  # type: ignore[arg-type]
        module.visit(visitor)
        visitor.infer_accesses()


Point = tuple[int, int]  # line, column


class _PositionState(PositionProvidingCodegenState):
    """LibCST's position-recording code generation, keeping plain (line, column) pairs while it
    runs (`_Positions` makes them `CodeRange`s once, at the end): LibCST builds two frozen
    positions and a range per node, splits every token with a regular expression, and records
    syntactic positions with a generator-based context manager."""

    __slots__ = ("spans",)
    spans: dict[cst.CSTNode, tuple[Point, Point]]  # set by `_Positions`

    def _update_position(self, value: str) -> None:
        if "\n" in value or "\r" in value:
            segments = NEWLINE_RE.split(value)
            self.line += len(segments) - 1
            self.column = len(segments[-1])
        else:
            self.column += len(value)

    def point(self) -> Point:
        return (self.line, self.column)

    def before_codegen(self, node: cst.CSTNode) -> None:
        self._stack.append((self.line, self.column))  # type: ignore[arg-type]

    def after_codegen(self, node: cst.CSTNode) -> None:
        start = self._stack.pop()
        if node not in self.spans:  # a syntactic position recorded inside wins
            self.spans[node] = (start, (self.line, self.column))  # type: ignore[assignment]

    def record_syntactic_position(  # type: ignore[override]
        self,
        node: cst.CSTNode,
        *,
        start_node: cst.CSTNode | None = None,
        end_node: cst.CSTNode | None = None,
    ) -> _Syntactic:
        return _Syntactic(self, node, start_node, end_node)


class _Syntactic:
    """`record_syntactic_position`'s context: the node's span is what its code generation
    adds inside it, or starts at `start_node`'s start / ends at `end_node`'s end."""

    __slots__ = ("end_node", "node", "start", "start_node", "state")

    def __init__(
        self,
        state: _PositionState,
        node: cst.CSTNode,
        start_node: cst.CSTNode | None,
        end_node: cst.CSTNode | None,
    ) -> None:
        self.state, self.node, self.start_node, self.end_node = state, node, start_node, end_node
        self.start: Point = (0, 0)

    def __enter__(self) -> None:
        self.start = self.state.point()

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        spans = self.state.spans
        start = spans[self.start_node][0] if self.start_node is not None else self.start
        end = spans[self.end_node][1] if self.end_node is not None else self.state.point()
        spans[self.node] = (start, end)


class _Positions(BaseMetadataProvider[CodeRange]):
    """`PositionProvider`'s metadata, from `_PositionState`'s code generation."""

    def _gen(self, wrapper: MetadataWrapper) -> Mapping[cst.CSTNode, CodeRange]:
        """The ranges, read-only, made as they are asked for (LibCST's `_gen` would copy
        `_computed` into a dict, making every one)."""
        module = wrapper.module
        state = _PositionState(
            default_indent=module.default_indent,
            default_newline=module.default_newline,
            provider=self,
        )
        state.spans = {}
        module._codegen(state)
        return MappingProxyType(_Ranges(state.spans))


class _Ranges(Mapping[cst.CSTNode, CodeRange]):
    """Each node's `CodeRange`, made from its span when first asked for: a check asks for few
    of them, and making one per node was a tenth of the positions' time."""

    __slots__ = ("made", "spans")

    def __init__(self, spans: Mapping[cst.CSTNode, tuple[Point, Point]]) -> None:
        self.spans = spans
        self.made: dict[cst.CSTNode, CodeRange] = {}

    def __getitem__(self, node: cst.CSTNode) -> CodeRange:
        found = self.made.get(node)
        if found is None:
            start, end = self.spans[node]
            found = self.made[node] = CodeRange(CodePosition(*start), CodePosition(*end))
        return found

    def __contains__(self, node: object) -> bool:
        return node in self.spans

    def __iter__(self) -> Iterator[cst.CSTNode]:
        return iter(self.spans)

    def __len__(self) -> int:
        return len(self.spans)


# LibCST's providers, and ours that give the same metadata faster.
_FASTER: dict[ProviderT, ProviderT] = {
    ScopeProvider: _Scopes,
    ExpressionContextProvider: _ExpressionContexts,
    PositionProvider: _Positions,
}
