"""Adding an import where isort and Ruff's `I` rules put it.

A fix that needs `import jax` adds it to the module's leading import statements: in its section
(`__future__`, the standard library, third-party, first-party, relative), in the order of the
section (straight `import x` first, then `from x import y`, each by module name, case aside),
so that a file that `ruff check --select I` passes still passes. A section the file lacks
starts after the sections that come before it, one blank line apart. An import the module
already makes (`import jax`; `from m import obj`, or `from m import *`) is not added again.
"""

from __future__ import annotations

import sys
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from enum import IntEnum

import libcst as cst
from libcst.helpers import get_full_name_for_node

from jaxfix.fixes.fix import ImportNeeded


class Section(IntEnum):
    FUTURE = 0
    STANDARD = 1
    THIRD_PARTY = 2
    FIRST_PARTY = 3
    LOCAL = 4


@dataclass(frozen=True)
class _Placed:
    """One leading import statement: where it is in the module's body, its section and its
    sort key within the section."""

    index: int
    section: Section
    key: tuple[bool, str]


def add_imports(
    module: cst.Module, needed: Sequence[ImportNeeded], first_party: Collection[str] = ()
) -> cst.Module:
    """`module` with the imports of `needed` it lacks; `first_party`: the top-level packages
    of the project (the run's packages)."""
    for wanted in dict.fromkeys(needed):
        if not _present(module, wanted):
            module = _insert(module, wanted, first_party)
    return module


def _present(module: cst.Module, wanted: ImportNeeded) -> bool:
    for statement in module.body:
        for small in statement.body if isinstance(statement, cst.SimpleStatementLine) else ():
            if wanted.obj is None and isinstance(small, cst.Import):
                if any(a.asname is None and _name(a) == wanted.module for a in small.names):
                    return True
            elif wanted.obj is not None and isinstance(small, cst.ImportFrom):
                if small.relative or _module_of(small) != wanted.module:
                    continue
                if isinstance(small.names, cst.ImportStar) or any(
                    a.asname is None and _name(a) == wanted.obj for a in small.names
                ):
                    return True
    return False


def _insert(module: cst.Module, wanted: ImportNeeded, first_party: Collection[str]) -> cst.Module:
    placed = _leading_imports(module, first_party)
    merged = _merged(module, placed, wanted)
    if merged is not None:
        return merged
    statement = _statement(wanted)
    section = _section(wanted.module, 0, first_party)
    key = (wanted.obj is not None, wanted.module.lower())
    body = list(module.body)
    same = [p for p in placed if p.section == section]
    if same:
        later = next((p for p in same if p.key > key), None)
        if later is None:  # last of its section
            body.insert(same[-1].index + 1, statement)
        else:  # takes the place (and the lines above) of the first that sorts after it
            body[later.index] = body[later.index].with_changes(leading_lines=())
            body.insert(later.index, statement.with_changes(leading_lines=_above(module, later)))
        return module.with_changes(body=body)
    before = [p for p in placed if p.section < section]
    if before:  # a section of its own after those that come first
        body.insert(before[-1].index + 1, statement.with_changes(leading_lines=[cst.EmptyLine()]))
        after = before[-1].index + 2
        if after < len(body) and _is_import(body[after]) and not body[after].leading_lines:
            body[after] = body[after].with_changes(leading_lines=[cst.EmptyLine()])
        return module.with_changes(body=body)
    if placed:  # a section before all the others
        first = placed[0]
        moved = _above(module, first)
        body[first.index] = body[first.index].with_changes(leading_lines=[cst.EmptyLine()])
        body.insert(first.index, statement.with_changes(leading_lines=moved))
        return module.with_changes(body=body)
    # No import yet: after the docstring, one blank line from what follows.
    index = 1 if has_docstring(module) else 0
    leading = [cst.EmptyLine()] if index else []
    body.insert(index, statement.with_changes(leading_lines=leading))
    if index + 1 < len(body):
        follower = body[index + 1]
        blank = 2 if isinstance(follower, cst.FunctionDef | cst.ClassDef) else 1
        lines = list(follower.leading_lines)
        missing = blank - sum(1 for line in lines[:blank] if line.comment is None)
        body[index + 1] = follower.with_changes(
            leading_lines=[cst.EmptyLine()] * max(missing, 0) + lines
        )
    return module.with_changes(body=body)


def _merged(
    module: cst.Module, leading: Sequence[_Placed], wanted: ImportNeeded
) -> cst.Module | None:
    """`module` with `wanted.obj` added to one of its `leading` imports that is a `from
    wanted.module import ...` (at its place in Ruff's order: constants, classes, then the
    rest), or None when there is none."""
    if wanted.obj is None:
        return None
    for placed in leading:
        statement = module.body[placed.index]
        assert isinstance(statement, cst.SimpleStatementLine)
        small = statement.body[0]
        if (
            not isinstance(small, cst.ImportFrom)
            or small.relative
            or isinstance(small.names, cst.ImportStar)
            or _module_of(small) != wanted.module
        ):
            continue
        names = list(small.names)
        keys = [_member_key(_name(a)) for a in names]
        new = cst.ImportAlias(cst.Name(wanted.obj))
        at = len(names)
        if keys == sorted(keys):
            at = next((i for i, k in enumerate(keys) if k > _member_key(wanted.obj)), len(names))
        comma = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
        if at == len(names):
            names = [*names[:-1], names[-1].with_changes(comma=comma), new]
        else:
            names.insert(at, new.with_changes(comma=comma))
        body = list(module.body)
        body[placed.index] = statement.with_changes(body=[small.with_changes(names=names)])
        return module.with_changes(body=body)
    return None


def _member_key(name: str) -> tuple[int, str]:
    """Ruff's (and isort's) `order-by-type`: CONSTANTS, then Classes, then the rest."""
    kind = 0 if name.isupper() and len(name) > 1 else 1 if name[:1].isupper() else 2
    return kind, name.lower()


def _leading_imports(module: cst.Module, first_party: Collection[str]) -> list[_Placed]:
    """The import statements at the top of the module (after its docstring), up to the first
    other statement."""
    found: list[_Placed] = []
    for index, statement in enumerate(module.body):
        if index == 0 and has_docstring(module):
            continue
        if not _is_import(statement):
            break
        assert isinstance(statement, cst.SimpleStatementLine)
        small = statement.body[0]
        if isinstance(small, cst.Import):
            name = _name(small.names[0])
            section = _section(name, 0, first_party)
            found.append(_Placed(index, section, (False, name.lower())))
        elif isinstance(small, cst.ImportFrom):
            name = _module_of(small)
            section = _section(name, len(small.relative), first_party)
            found.append(_Placed(index, section, (True, name.lower())))
    return found


def _section(module: str, level: int, first_party: Collection[str]) -> Section:
    top = module.split(".", 1)[0]
    if level:
        return Section.LOCAL
    if module == "__future__":
        return Section.FUTURE
    if top in first_party:
        return Section.FIRST_PARTY
    if top in sys.stdlib_module_names:
        return Section.STANDARD
    return Section.THIRD_PARTY


def _statement(wanted: ImportNeeded) -> cst.SimpleStatementLine:
    if wanted.obj is None:
        code = f"import {wanted.module}\n"
    else:
        code = f"from {wanted.module} import {wanted.obj}\n"
    statement = cst.parse_statement(code)
    assert isinstance(statement, cst.SimpleStatementLine)
    return statement


def _above(module: cst.Module, placed: _Placed) -> Sequence[cst.EmptyLine]:
    statement = module.body[placed.index]
    assert isinstance(statement, cst.SimpleStatementLine)
    return statement.leading_lines


def _is_import(statement: cst.BaseStatement) -> bool:
    return (
        isinstance(statement, cst.SimpleStatementLine)
        and len(statement.body) == 1
        and isinstance(statement.body[0], cst.Import | cst.ImportFrom)
    )


def has_docstring(module: cst.Module) -> bool:
    """Whether the module starts with a docstring."""
    first = module.body[0] if module.body else None
    return (
        isinstance(first, cst.SimpleStatementLine)
        and len(first.body) == 1
        and isinstance(first.body[0], cst.Expr)
        and isinstance(first.body[0].value, cst.SimpleString | cst.ConcatenatedString)
    )


def _name(alias: cst.ImportAlias) -> str:
    return get_full_name_for_node(alias.name) or ""


def _module_of(statement: cst.ImportFrom) -> str:
    module = statement.module
    return (get_full_name_for_node(module) or "") if module is not None else ""
