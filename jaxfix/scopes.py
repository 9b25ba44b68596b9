"""LibCST's scopes, computed without its batched traversal.

`ScopeProvider` and the `ExpressionContextProvider` it depends on are "batchable": LibCST runs
each in a batched traversal whose only work is `visit_Module`, which walks the module with a
visitor of its own; the batched traversal then walks every node again for nothing, and finds
the providers' visitor methods with `inspect.getmembers` each time. That was 40 % of a rule
run. These providers run the same visitors once each, with the same results (tested against
LibCST's own providers), and resolve under their own keys: ask for `FastScopeProvider`.
"""

from __future__ import annotations

from typing import Any

import libcst as cst
from libcst.metadata import BaseMetadataProvider, ExpressionContext, ExpressionContextProvider
from libcst.metadata.expression_context_provider import ExpressionContextVisitor
from libcst.metadata.scope_provider import Scope, ScopeVisitor


class FastExpressionContextProvider(BaseMetadataProvider[ExpressionContext]):
    """`ExpressionContextProvider`'s metadata, from one walk."""

    def _gen_impl(self, module: cst.Module) -> None:
        module.visit(ExpressionContextVisitor(self, ExpressionContext.LOAD))  # type: ignore[arg-type]


class FastScopeProvider(BaseMetadataProvider[Scope | None]):
    """`ScopeProvider`'s metadata, from one walk."""

    METADATA_DEPENDENCIES = (FastExpressionContextProvider,)

    def get_metadata(self, key: Any, node: cst.CSTNode, *default: Any) -> Any:
        """LibCST's scope visitor asks for `ExpressionContextProvider`: answer from ours."""
        if key is ExpressionContextProvider:
            key = FastExpressionContextProvider
        return super().get_metadata(key, node, *default)

    def _gen_impl(self, module: cst.Module) -> None:
        visitor = ScopeVisitor(self)  # type: ignore[arg-type]
        module.visit(visitor)
        visitor.infer_accesses()
