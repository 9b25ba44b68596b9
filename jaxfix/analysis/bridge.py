"""Find the CPython node that stands where a LibCST node stands, by source position.

The analysis runs on CPython's tree; fixes are built on LibCST's. Both parse the same text, so
an expression is the node with the same span (LibCST counts columns in code points, CPython in
UTF-8 bytes; a parenthesized expression's span may or may not hold its parentheses), and a
function is the `def` whose name sits at the same place.
"""

from __future__ import annotations

import ast
import bisect
import re

Span = tuple[int, int, int, int]  # first line, first column, last line, end column (code points)
_DEF = re.compile(r"(?:async\s+)?def\s+")


class Positions:
    """The expressions and functions of one tree, keyed by where they stand in `text`.

    A top-level statement's nodes are indexed when a position inside it is first asked for:
    LibCST usually looks at a few statements of a large file."""

    def __init__(self, tree: ast.Module, text: str) -> None:
        self.lines = text.splitlines(keepends=True)
        self.expressions: dict[Span, ast.expr] = {}
        self.functions: dict[tuple[int, int], ast.FunctionDef | ast.AsyncFunctionDef] = {}
        self.statements: dict[tuple[int, int], ast.stmt] = {}
        self._statements = tree.body
        self._firsts = [first_line(statement) for statement in tree.body]
        self._indexed: set[int] = set()

    def _index(self, line: int) -> None:
        """Index the top-level statement that holds `line` (and those sharing its lines)."""
        found = bisect.bisect_right(self._firsts, line) - 1
        while found >= 0 and found not in self._indexed:
            self._indexed.add(found)
            self._index_statement(self._statements[found])
            previous = self._statements[found - 1] if found else None
            shares = previous is not None and (previous.end_lineno or 0) >= self._firsts[found]
            found = found - 1 if shares else -1  # statements sharing a line (`a = 1; b = 2`)

    def _index_statement(self, statement: ast.stmt) -> None:
        for node in ast.walk(statement):  # parents first: the outermost node wins a span
            if isinstance(node, ast.expr) and node.end_lineno is not None:
                self.expressions.setdefault(self._span(node), node)
            elif isinstance(node, ast.stmt):
                self.statements.setdefault(self.start(node), node)
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                line = self.lines[node.lineno - 1]
                start = self._column(node.lineno, node.col_offset)
                found = _DEF.match(line, start)
                if found is not None:
                    self.functions[(node.lineno, found.end())] = node

    def _column(self, line: int, offset: int) -> int:
        text = self.lines[line - 1] if line - 1 < len(self.lines) else ""
        if text.isascii():
            return offset
        return len(text.encode("utf-8")[:offset].decode("utf-8", errors="replace"))

    def _span(self, node: ast.expr) -> Span:
        assert node.end_lineno is not None and node.end_col_offset is not None
        return (
            node.lineno,
            self._column(node.lineno, node.col_offset),
            node.end_lineno,
            self._column(node.end_lineno, node.end_col_offset),
        )

    def expression(self, span: Span) -> ast.expr | None:
        """The expression at `span`, also when one of the two spans holds parentheses the
        other does not."""
        self._index(span[0])
        found = self.expressions.get(span) or self._widened(span)
        if found is not None:
            return found
        line, column, end_line, end_column = span
        while True:  # strip the parentheses LibCST counted and CPython did not
            head = self.lines[line - 1][column:] if line - 1 < len(self.lines) else ""
            tail = self.lines[end_line - 1][:end_column] if end_line - 1 < len(self.lines) else ""
            stripped_head, stripped_tail = head.lstrip(), tail.rstrip()
            if not (stripped_head.startswith("(") and stripped_tail.endswith(")")):
                return None
            column += len(head) - len(stripped_head) + 1
            end_column = len(stripped_tail) - 1
            inner = self.lines[line - 1][column:]
            column += len(inner) - len(inner.lstrip())
            end_column = len(self.lines[end_line - 1][:end_column].rstrip())
            found = self.expressions.get((line, column, end_line, end_column))
            if found is not None:
                return found

    def _widened(self, span: Span) -> ast.expr | None:
        """The expression at `span` with the parentheses around it that CPython counted and
        LibCST did not (a parenthesized tuple)."""
        line, column, end_line, end_column = span
        for _ in range(8):
            head = self.lines[line - 1][:column].rstrip() if line - 1 < len(self.lines) else ""
            tail = self.lines[end_line - 1][end_column:] if end_line - 1 < len(self.lines) else ""
            stripped = tail.lstrip()
            if not (head.endswith("(") and stripped.startswith(")")):
                return None
            column = len(head) - 1
            end_column += len(tail) - len(stripped) + 1
            found = self.expressions.get((line, column, end_line, end_column))
            if found is not None:
                return found
        return None

    def start(self, node: ast.stmt) -> tuple[int, int]:
        """Where `node` starts: its line, and its column in code points."""
        return node.lineno, self._column(node.lineno, node.col_offset)

    def statement(self, line: int, column: int) -> ast.stmt | None:
        """The statement (the first of a line's) that starts at (`line`, `column`)."""
        self._index(line)
        return self.statements.get((line, column))

    def function(self, line: int, column: int) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
        """The `def` whose name starts at (`line`, `column`)."""
        self._index(line)
        return self.functions.get((line, column))


def first_line(statement: ast.stmt) -> int:
    """The first line of `statement`, its decorators included."""
    decorators: list[ast.expr] = getattr(statement, "decorator_list", [])
    return min([statement.lineno, *(decorator.lineno for decorator in decorators)])
