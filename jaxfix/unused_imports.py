"""Removing the imports a fix leaves unused.

LibCST's `RemoveImportsVisitor` removes an import (keeping the comments and commas around it)
when its `GatherUnusedImportsVisitor` finds no reference to it in LibCST's scopes of the whole
new module: a fifth of a second per fixed file, more than the rest of the fix. Here the same
removal decides from the names the new code reads, by CPython's parse: an import stays when its
name is read anywhere in the module, named in `__all__` or written in a string annotation,
which keeps at least every import LibCST's scopes would keep.

Imported only when a fix removes code: `libcst.codemod` pulls in `libcst.matchers`.
"""

from __future__ import annotations

import ast
import re

import libcst as cst
from libcst.codemod import CodemodContext
from libcst.codemod.visitors import RemoveImportsVisitor

_WORD = re.compile(r"[A-Za-z_]\w*")
# Calls whose string arguments are annotations (as LibCST's gathering reads them).
_ANNOTATING_CALLS = frozenset({"cast", "TypeVar"})


def names_read(code: str) -> set[str]:
    """The names `code` reads anywhere, with those of its string annotations and `__all__`."""
    found: set[str] = set()
    strings: list[ast.AST] = []
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            found.add(node.id)
        elif isinstance(node, ast.arg | ast.AnnAssign) and node.annotation is not None:
            strings.append(node.annotation)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.returns:
            strings.append(node.returns)
        elif isinstance(node, ast.Call) and _called_name(node.func) in _ANNOTATING_CALLS:
            strings.extend(node.args)
        elif isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign) and node.value:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
                strings.append(node.value)
    for part in strings:
        for node in ast.walk(part):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                found.update(_WORD.findall(node.value))
    return found


def _called_name(func: ast.expr) -> str | None:
    if isinstance(func, ast.Name):
        return func.id
    return func.attr if isinstance(func, ast.Attribute) else None


def remove_unused_imports(
    context: CodemodContext, module: cst.Module, read: set[str]
) -> cst.Module:
    """`module` without the imports that `RemoveImportsVisitor.remove_unused_import_by_node`
    registered in `context` and whose names nothing in `read` (see `names_read`) uses."""
    return module.visit(_Remover(context, read))


class _Remover(RemoveImportsVisitor):
    """LibCST's removal, told which imports are unused by `read` instead of by scopes."""

    METADATA_DEPENDENCIES = ()  # type: ignore[misc,assignment]  # it resolves none

    def __init__(self, context: CodemodContext, read: set[str]) -> None:
        super().__init__(context)
        self._read = read

    def visit_Module(self, node: cst.Module) -> None:
        """No scopes to gather: each import is judged as it is visited, before its `leave_`."""

    def visit_Import(self, node: cst.Import) -> None:
        self._note_unused(node)

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        # As LibCST's gathering: neither `from __future__`, `import *` nor `from . import x`.
        module = node.module
        star = isinstance(node.names, cst.ImportStar)
        if not star and module is not None and module.value != "__future__":
            self._note_unused(node)

    def _note_unused(self, node: cst.Import | cst.ImportFrom) -> None:
        assert not isinstance(node.names, cst.ImportStar)
        for alias in node.names:
            bound = alias.evaluated_alias or alias.evaluated_name
            if bound.split(".", 1)[0] not in self._read:
                self._unused_imports[alias] = node
