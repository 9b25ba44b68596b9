"""Removing the imports a fix leaves unused.

LibCST's `RemoveImportsVisitor` removes an import (keeping the comments and commas around it)
that the removed code used, by qualified names of the old module, when its
`GatherUnusedImportsVisitor` finds no reference to it in LibCST's scopes of the whole new
module: a fifth of a second per fixed file, more than the rest of the fix. Here the same
removal decides from names, by CPython's parse: an import of a name the removed code used goes
unless the name is read anywhere in the new module, named in `__all__` or written in a string
annotation, which keeps at least every import LibCST's scopes would keep.

The edit of an import is `RemoveImportsVisitor`'s, written again (the tests compare the two):
its module, `libcst.codemod`, imports `libcst.matchers`, a third of a second at every `apply`,
and its visit rebuilds the whole module where only the imports change.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Collection, Iterator

import libcst as cst
from libcst.helpers import get_absolute_module_from_package_for_import

from jaxfix.fixes.fix import Replacement, ReplaceNodes
from jaxfix.fixes.traversal import children

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
    replacements: dict[cst.CSTNode, Replacement] = {}
    for node in _imports(module):
        kept = _without(node, gone)
        if kept is not node:
            replacements[node] = kept
    return module.visit(ReplaceNodes(replacements)) if replacements else module


def _imports(root: cst.CSTNode) -> Iterator[cst.Import | cst.ImportFrom]:
    """The import statements anywhere in `root` (none sits in an expression)."""
    todo = [root]
    while todo:
        node = todo.pop()
        if type(node) is cst.Import or type(node) is cst.ImportFrom:
            yield node
        elif not isinstance(node, cst.BaseExpression):
            todo.extend(children(node))


def _without(
    node: cst.Import | cst.ImportFrom, gone: Collection[str]
) -> cst.Import | cst.ImportFrom | cst.RemovalSentinel:
    """`node` without its aliases that bind a name in `gone`, as LibCST's
    `RemoveImportsVisitor` removes them: the trailing comma of what is left goes, the comments
    after a removed alias of a `from` import stay (on the alias before, else on the
    parenthesis). Not `from __future__`, `import *` or a relative import (the package, which
    resolves it, is unknown), which LibCST leaves too."""
    if isinstance(node, cst.ImportFrom):
        module = get_absolute_module_from_package_for_import(None, node)
        if isinstance(node.names, cst.ImportStar) or module in (None, "__future__"):
            return node
    assert not isinstance(node.names, cst.ImportStar)
    names = node.names
    kept: list[cst.ImportAlias] = []
    lpar = node.lpar if isinstance(node, cst.ImportFrom) else None
    for alias in names:
        bound = alias.evaluated_alias or alias.evaluated_name
        if bound.split(".", 1)[0] not in gone:
            kept.append(alias)
            continue
        comma = alias.comma
        if not isinstance(node, cst.ImportFrom) or not isinstance(comma, cst.Comma):
            continue
        if kept:
            previous = kept[-1]
            if isinstance(previous.comma, cst.Comma):
                whitespace = _merged(previous.comma.whitespace_after, comma.whitespace_after)
                kept[-1] = previous.with_deep_changes(previous.comma, whitespace_after=whitespace)
            else:
                kept[-1] = previous.with_changes(comma=comma)
        elif isinstance(lpar, cst.LeftParen):
            lpar = lpar.with_changes(
                whitespace_after=_merged(lpar.whitespace_after, comma.whitespace_after)
            )
    if len(kept) == len(names):
        return node
    if not kept:
        return cst.RemoveFromParent()
    if kept[-1] is not names[-1]:
        kept[-1] = kept[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
    if isinstance(node, cst.ImportFrom):
        return node.with_changes(names=kept, lpar=lpar)
    return node.with_changes(names=kept)


def _merged(
    left: cst.BaseParenthesizableWhitespace, right: cst.BaseParenthesizableWhitespace
) -> cst.BaseParenthesizableWhitespace:
    """The whitespace after a kept comma, with the comments after a removed one."""
    if not isinstance(right, cst.ParenthesizedWhitespace):
        return left
    if not isinstance(left, cst.ParenthesizedWhitespace):
        return right
    return left.with_changes(empty_lines=tuple(e for e in right.empty_lines if e.comment))
