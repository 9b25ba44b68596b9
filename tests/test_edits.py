"""Text edits: applying the edits between two texts gives the second, whatever the line ends."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from jaxfix.models.diagnostic import TextEdit
from jaxfix.models.edits import apply_edits, line_edits, source_lines

LINES = st.lists(
    st.sampled_from(["a", "b", "x = 1", "π = '😀'", "", "\x0c"]).flatmap(
        lambda body: st.sampled_from(["\n", "\r\n", "\r"]).map(lambda end: body + end)
    ),
    max_size=8,
)
TEXTS = st.tuples(LINES, st.sampled_from(["", "tail", "é"])).map(lambda p: "".join(p[0]) + p[1])


@given(TEXTS, TEXTS)
def test_edits_turn_before_into_after(before: str, after: str) -> None:
    assert apply_edits(before, line_edits(before, after)) == after


@given(TEXTS)
def test_no_edits_between_equal_texts(text: str) -> None:
    assert line_edits(text, text) == ()


def test_lines_break_only_where_python_does() -> None:
    assert source_lines("a\x0cb\u2028c\nd\r\ne\rf") == ["a\x0cb\u2028c\n", "d\r\n", "e\r", "f"]


def test_edit_is_a_whole_line_replacement() -> None:
    before = "import jax\n\nx = 1\ny = 2\n"
    after = "import jax\n\nx = 10\ny = 2\n"
    assert line_edits(before, after) == (TextEdit(3, 0, 4, 0, "x = 10\n"),)


def test_edit_past_an_unterminated_last_line_ends_at_its_end() -> None:
    assert line_edits("a\nb", "a\nc") == (TextEdit(2, 0, 2, 1, "c"),)


def test_overlapping_edits_are_refused() -> None:
    with pytest.raises(ValueError, match="overlapping"):
        apply_edits("abc\n", [TextEdit(1, 0, 1, 2, "x"), TextEdit(1, 1, 1, 3, "y")])
