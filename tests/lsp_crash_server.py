"""`jaxfix lsp` with a rule that crashes on any function named `explode`: how the tests see
that a rule crash on one document is reported and the server goes on."""

from __future__ import annotations

import libcst as cst
from jaxfix.codemods.cache_on_traced import CacheOnTraced

from jaxfix.lsp.server import serve

original = CacheOnTraced.visit_FunctionDef


def visit_function_def(self: CacheOnTraced, node: cst.FunctionDef) -> None:
    if node.name.value == "explode":
        raise RuntimeError("the rule exploded")
    original(self, node)


if __name__ == "__main__":
    CacheOnTraced.visit_FunctionDef = visit_function_def  # type: ignore[method-assign]
    serve()
