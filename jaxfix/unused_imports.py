"""Removing the imports a fix leaves unused.

LibCST's `RemoveImportsVisitor` removes an import (keeping the comments and commas around it)
that the removed code used, by qualified names of the old module, when its
`GatherUnusedImportsVisitor` finds no reference to it in LibCST's scopes of the whole new
module: a fifth of a second per fixed file, more than the rest of the fix. Here the same
removal decides from names, by CPython's parse: an import of a name the removed code used goes
unless the name is read anywhere in the new module, named in `__all__` or written in a string
annotation, which keeps at least every import LibCST's scopes would keep.

Imported only when a fix removes code: `libcst.codemod` pulls in `libcst.matchers`.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Collection

import libcst as cst
from libcst.codemod import CodemodContext
from libcst.codemod.visitors import RemoveImportsVisitor
from libcst.helpers import get_absolute_module_from_package_for_import

_WORD = re.compile(r"[A-Za-z_]\w*")
# Calls whose string arguments are annotations (as LibCST's gathering reads them).
_ANNOTATING_CALLS = frozenset({"cast", "TypeVar"})


def names_in_use(code: str) -> set[str]:
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


def remove_unused_imports(module: cst.Module, gone: Collection[str]) -> cst.Module:
    """`module` without its imports of the names in `gone` (names that removed code used and
    that `names_in_use` no longer finds)."""
    return module.visit(_Remover(set(gone)))


class _Remover(RemoveImportsVisitor):
    """LibCST's removal of the imports of the names in `gone`, with no scopes to gather."""

    METADATA_DEPENDENCIES = ()  # type: ignore[misc,assignment]  # it resolves none

    def __init__(self, gone: set[str]) -> None:
        super().__init__(CodemodContext())
        self._gone = gone

    def visit_Module(self, node: cst.Module) -> None:
        """Each import is marked as it is visited, before its `leave_` removes what is marked."""

    def visit_Import(self, node: cst.Import) -> None:
        for alias in self._gone_aliases(node):
            self.unused_module_imports[alias.evaluated_name] = alias.evaluated_alias

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        # As LibCST's gathering: not `from __future__`, `import *` or `from . import x` (the
        # package, which resolves a relative import, is unknown).
        module = get_absolute_module_from_package_for_import(None, node)
        if isinstance(node.names, cst.ImportStar) or module in (None, "__future__"):
            return
        for alias in self._gone_aliases(node):
            entry = (alias.evaluated_name, alias.evaluated_alias)
            self.unused_obj_imports.setdefault(module, set()).add(entry)

    def _gone_aliases(self, node: cst.Import | cst.ImportFrom) -> list[cst.ImportAlias]:
        """The aliases of `node` that bind a name in `gone`, marked unused."""
        assert not isinstance(node.names, cst.ImportStar)
        found = []
        for alias in node.names:
            bound = alias.evaluated_alias or alias.evaluated_name
            if bound.split(".", 1)[0] in self._gone:
                self._unused_imports[alias] = node
                found.append(alias)
        return found
