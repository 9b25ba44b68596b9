"""The cheap first pass over a file, with CPython's own parser (about ten times faster than
LibCST's).

It gives CPython's verdict on the file (a syntax error reads as Python reports it, and input
that would overflow LibCST's native parser never reaches it), and it cuts out the top-level
statements a rule can depend on, so that LibCST parses and resolves metadata only for those:

- the *seeds*, statements that can hold a finding (chosen by `jaxfix.analysis.candidates`);
- their *dependents*, statements that mention a name a seed defines (a caller,
  `f.cache_clear()`, a reader of a global it sets), which rules and fixes look at;
- the *dependencies* of all of those, statements that define a name they mention (imports,
  aliases, module-level state), transitively.

Which code is traced is not decided on the slice: the analysis of the whole file says it.

The slice keeps every statement's text, so columns are unchanged and lines map back by offset.
"""

from __future__ import annotations

import ast
import bisect
import re
from collections import defaultdict
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass

from jaxfix.analysis.bridge import first_line
from jaxfix.analysis.summaries import Bindings
from jaxfix.models.parts import Outline, WholeModule

# LibCST's parser is quadratic in the depth of an expression (a 4,000-term sum takes seconds to
# parse) and recurses once per level: deeper code is reported instead of analysed.
MAX_DEPTH = 1000

_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")


class InvalidSource(Exception):
    """CPython rejects the file, or it is too deeply nested to analyse."""

    def __init__(self, line: int, column: int, problem: str) -> None:
        super().__init__(f"{line}:{column}: {problem}")
        self.line, self.column, self.problem = line, column, problem


def parse(text: str, filename: str) -> ast.Module:
    """CPython's syntax tree of `text`; raises `InvalidSource` with CPython's wording."""
    try:
        tree = compile(text, filename, "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
    except SyntaxError as error:
        problem = f"syntax error: {error.msg}"
        raise InvalidSource(error.lineno or 1, error.offset or 1, problem) from None
    except (MemoryError, RecursionError):
        raise InvalidSource(1, 1, "too deeply nested for Python's parser") from None
    assert isinstance(tree, ast.Module)
    return tree


@dataclass(frozen=True)
class Slice:
    """The statements to analyse, as source text, and how its lines map to the file's."""

    text: str
    whole: bool  # the slice is the file itself
    _starts: tuple[int, ...] = ()  # the slice line at which each kept chunk starts...
    _offsets: tuple[int, ...] = ()  # ...and what to add to its lines to get the file's

    def file_line(self, line: int) -> int:
        """The file's line number of the slice's `line`."""
        if self.whole:
            return line
        index = bisect.bisect_right(self._starts, line) - 1
        return line + self._offsets[max(index, 0)]


@dataclass
class _Chunk:
    """Top-level statements that share lines: the unit that is kept or dropped."""

    first: int  # 1-based, inclusive
    last: int
    nodes: list[ast.stmt]
    defines: set[str]
    mentions: set[str]

    @property
    def is_definition(self) -> bool:
        """Only `def`s and classes: what their bodies mention is not needed to analyse the
        code that uses them."""
        return all(isinstance(node, _DEFINITIONS) for node in self.nodes)

    @property
    def star_import(self) -> bool:
        """`from m import *` can define any name: always kept."""
        return "*" in self.defines


def relevant_slice(
    text: str,
    tree: ast.Module,
    seeds: Collection[int] | None,
    bindings: Sequence[Bindings] = (),
    *,
    users_of: Collection[int] | None = None,
    for_fixes: Collection[str] | None = None,
    script: bool = False,
) -> Slice | None:
    """The part of `text` that the top-level statements `seeds` (indices into `tree.body`,
    whose `bindings` are given in the same order) depend on; None when there are no seeds,
    the whole file when `seeds` is None. Raises `InvalidSource` when a kept statement is nested
    deeper than `MAX_DEPTH`. The statements that use what a seed defines are kept for the
    seeds in `users_of` (every seed when None).

    `for_fixes` (names) makes the slice one that fixes can be applied to as to the whole file:
    it also keeps every import (new imports go where they would in the file) and every
    statement that uses one of these names (an import a fix stops using is removed only when
    nothing else uses it).

    `script` also keeps the module's top-level code other than imports and definitions, and the
    statements that use what it defines: the host code that may read what a fix's host
    callback writes (`print(LAST)` after the call, a `def report()` that reads `LAST`)."""
    if seeds is None:
        check_depth(tree.body)
        return Slice(text, whole=True)
    if not seeds:
        return None
    lines = _LINE.findall(text)
    chunks = _chunks(tree.body, bindings)
    chunk_of = [index for index, chunk in enumerate(chunks) for _ in chunk.nodes]
    seed_chunks = {chunk_of[statement] for statement in seeds}
    seed_chunks.update(index for index, chunk in enumerate(chunks) if chunk.star_import)
    # What makes a function public or a module a script (JF107 asks): small, always kept.
    seed_chunks.update(
        index
        for index, chunk in enumerate(chunks)
        if "__all__" in chunk.defines or "__name__" in chunk.mentions
    )
    with_users = (
        set(seed_chunks) if users_of is None else {chunk_of[statement] for statement in users_of}
    )
    if script:
        code = {
            index
            for index, chunk in enumerate(chunks)
            if not chunk.is_definition and not all(map(_is_import, chunk.nodes))
        }
        seed_chunks |= code
        with_users |= code
    dropped = for_fixes or ()
    definers = {i for i, c in enumerate(chunks) if not c.defines.isdisjoint(dropped)}
    kept = _closure(chunks, seed_chunks | definers, with_users | definers)
    # The imports of `jax` that a fix's `jax.debug.callback` is written with (`import jax as
    # J`), without the statements that use them.
    kept.update(
        i
        for i, chunk in enumerate(chunks)
        if all(map(_is_import, chunk.nodes)) and any(map(_imports_jax, chunk.nodes))
    )
    if for_fixes is not None:
        kept.update(i for i, chunk in enumerate(chunks) if all(map(_is_import, chunk.nodes)))
    check_depth(node for index in kept for node in chunks[index].nodes)
    if len(kept) == len(chunks):
        return Slice(text, whole=True)
    parts: list[str] = []
    starts: list[int] = []
    offsets: list[int] = []
    line = 1
    for index in sorted(kept):
        chunk = chunks[index]
        # For fixes, the blank and comment lines above a statement come with it: LibCST lays
        # out what a fix inserts or removes around them as it would in the file.
        first = (
            (chunks[index - 1].last + 1 if index else 1) if for_fixes is not None else chunk.first
        )
        starts.append(line)
        offsets.append(first - line)
        block = "".join(lines[first - 1 : chunk.last])
        parts.append(block if block.endswith(("\n", "\r")) else block + "\n")
        line += chunk.last - first + 1
    return Slice("".join(parts), False, tuple(starts), tuple(offsets))


def outline(
    tree: ast.Module, bindings: Sequence[Bindings], names: Collection[str], whole: WholeModule
) -> Outline:
    """The `Outline` of the file: its chunks; the chunks to keep with each, those defining a
    name it mentions (in function bodies too: a later round interprets them) and, for a `def`
    or class, those that use it at the top level (`f.defjvp(f_jvp)`, `g = f`, `@f.defvjp`, the
    decorator of another `def`: what the analysis of `f` reads besides `f`); and the chunks
    defining each of `names` (the top-level functions other modules can enter) and the classes
    `whole` says parameters are given instances of."""
    chunks = _chunks(tree.body, bindings)
    definers: dict[str, list[int]] = defaultdict(list)
    for index, chunk in enumerate(chunks):
        for name in chunk.defines:
            definers[name].append(index)
    # A class's name, or `C[]` for a sequence of its instances (`declarations.ELEMENTS`).
    entered = {*names, *(c.removesuffix("[]") for _, ps in whole.instance_params for _, c in ps)}
    definitions = {i for i, chunk in enumerate(chunks) if chunk.is_definition}
    functions = {name for i in definitions for name in chunks[i].defines}
    users: dict[str, list[int]] = defaultdict(list)  # of the names `def`s and classes define
    for index, chunk in enumerate(chunks):
        used = _decorator_names(chunk.nodes) if index in definitions else chunk.mentions
        for name in used & functions:
            users[name].append(index)
    kept_with = []
    for index, chunk in enumerate(chunks):
        kept = {other for name in chunk.mentions & definers.keys() for other in definers[name]}
        if index in definitions:
            kept.update(other for name in chunk.defines for other in users.get(name, ()))
        kept_with.append(tuple(sorted(kept)))
    return Outline(
        tuple((chunk.first, chunk.last) for chunk in chunks),
        tuple(kept_with),
        tuple((name, tuple(definers[name])) for name in sorted(entered) if name in definers),
        tuple(i for i, chunk in enumerate(chunks) if all(map(_is_import, chunk.nodes))),
        whole,
    )


def _decorator_names(nodes: Iterable[ast.stmt]) -> set[str]:
    """The names the decorators of these definitions read."""
    return {
        node.id
        for statement in nodes
        for decorator in getattr(statement, "decorator_list", ())
        for node in ast.walk(decorator)
        if isinstance(node, ast.Name)
    }


def lines_of(statement: ast.stmt) -> tuple[int, int]:
    """The first and last line of `statement`, its decorators included."""
    return first_line(statement), statement.end_lineno or statement.lineno


def _imports_jax(node: ast.stmt) -> bool:
    """`import jax`, `import jax as J`, `import jax.numpy`: what binds a name to `jax`."""
    return isinstance(node, ast.Import) and any(
        alias.name == "jax" or (alias.name.startswith("jax.") and alias.asname is None)
        for alias in node.names
    )


def _is_import(node: ast.stmt) -> bool:
    return isinstance(node, ast.Import | ast.ImportFrom)


def _chunks(body: Sequence[ast.stmt], bindings: Sequence[Bindings]) -> list[_Chunk]:
    if len(bindings) != len(body):
        raise ValueError("one Bindings per top-level statement is needed")
    chunks: list[_Chunk] = []
    for node, names in zip(body, bindings, strict=True):
        first, last = lines_of(node)
        if chunks and first <= chunks[-1].last:
            chunk = chunks[-1]
            chunk.last = max(chunk.last, last)
            chunk.nodes.append(node)
            chunk.defines |= names.defines
            chunk.mentions |= names.mentions
        else:
            chunks.append(_Chunk(first, last, [node], set(names.defines), set(names.mentions)))
    return chunks


def _closure(
    chunks: Sequence[_Chunk], seeds: Iterable[int], with_users: Collection[int]
) -> set[int]:
    """Seeds, the statements that mention a name one of the seeds `with_users` defines (its
    callers, `f.cache_clear()`, the readers of a global it sets: what some rules and fixes
    look at), and the dependencies of
    those, transitively through the statements that are not definitions (imports, aliases,
    module-level state): the `def`s and classes they name are kept without what their bodies
    mention. Whether code is traced comes from the analysis of the whole file, not the slice."""
    definers: dict[str, list[int]] = defaultdict(list)
    mentioners: dict[str, list[int]] = defaultdict(list)
    for index, chunk in enumerate(chunks):
        for name in chunk.defines:
            definers[name].append(index)
        for name in chunk.mentions:
            mentioners[name].append(index)
    used = list(seeds)
    used += [o for index in with_users for name in chunks[index].defines for o in mentioners[name]]
    kept = set(used)
    work = [other for index in used for name in chunks[index].mentions for other in definers[name]]
    while work:
        index = work.pop()
        if index not in kept:
            kept.add(index)
            if not chunks[index].is_definition:
                work.extend(other for name in chunks[index].mentions for other in definers[name])
    return kept


def check_depth(nodes: Iterable[ast.AST]) -> None:
    """Raise `InvalidSource` at the first node nested deeper than `MAX_DEPTH`."""
    stack: list[tuple[ast.AST, int, ast.AST]] = [(node, 1, node) for node in nodes]
    while stack:
        node, depth, statement = stack.pop()  # statement: the innermost one holding `node`
        if isinstance(node, ast.stmt):
            statement = node
        if depth > MAX_DEPTH:
            raise InvalidSource(
                getattr(statement, "lineno", 1),
                getattr(statement, "col_offset", 0) + 1,
                f"nested more than {MAX_DEPTH} levels deep: not analysed",
            )
        stack.extend((child, depth + 1, statement) for child in ast.iter_child_nodes(node))
