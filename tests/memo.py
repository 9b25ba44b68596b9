"""`check_text` is pure: the tests that ask it the same question of the same fixture (several
tests, several files) share one answer per worker instead of analysing the text again."""

from __future__ import annotations

import functools
from collections.abc import Sequence

from jaxfix.models.diagnostic import Diagnostic
from jaxfix.models.edits import EditsWanted
from jaxfix.rules.rule import Rule
from jaxfix.run.engine import check_text


def checked(
    text: str, rules: Sequence[type[Rule]], *, edits: EditsWanted = False, slicing: bool = True
) -> list[Diagnostic]:
    """`check_text(text, rules, edits=edits, slicing=slicing)`, computed once per worker."""
    return list(_checked(text, tuple(rules), edits, slicing))


@functools.cache
def _checked(
    text: str, rules: tuple[type[Rule], ...], edits: EditsWanted, slicing: bool
) -> tuple[Diagnostic, ...]:
    return tuple(check_text(text, rules, edits=edits, slicing=slicing))
