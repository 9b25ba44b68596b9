"""The per-fix review loop, driven by scripted answers against the real engine: what each answer
does, what is offered, what is shown, and that nothing declined comes back or loops forever."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence

import pytest

from jaxfix.models.diagnostic import Diagnostic, FixSafety, TextEdit
from jaxfix.models.edits import apply_edits, source_lines
from jaxfix.report.interactive import EXTRA_DECISIONS, HINT, PROMPT, Review, review_file
from jaxfix.rules.registry import all_rules
from jaxfix.run.engine import check_text, fix_text

RULES = all_rules()
NAME = "a.py"

# An unsafe JF101 (line 12), then a safe JF102 (line 16) whose fix also removes the import
# line of `functools`: every line above the fix moves up.
MIXED = """\
import functools
import pickle

import jax

BLOBS = []


@jax.jit
def step(x):
    y = x * 2
    BLOBS.append(pickle.dumps(y))
    return y


@functools.lru_cache
@jax.jit
def f(x):
    return x + 1
"""

# Two JF101 findings alike in code, message and line text (lines 12 and 22); the first fix
# adds `import jax` under the imports: every line below them moves down.
TWINS = """\
import pickle

from jax import jit

BLOBS = []


def make_left():
    @jit
    def step(x):
        y = x * 2
        BLOBS.append(pickle.dumps(y))
        return y

    return step


def make_right():
    @jit
    def step(x):
        y = x * 2
        BLOBS.append(pickle.dumps(y))
        return y

    return step
"""


@functools.cache
def engine_check(text: str) -> tuple[Diagnostic, ...]:
    """The real engine's findings of `text`, each fixable one carrying its own fix as edits.
    Cached: the tests review the same few texts, and LibCST is slow."""
    return tuple(check_text(text, RULES, edits=True))


class Script:
    """`ask` with scripted answers: records each prompt; an exception in the script is raised;
    a question beyond the script fails the test."""

    def __init__(self, *answers: str | BaseException) -> None:
        self.answers = list(answers)
        self.prompts: list[str] = []

    def __call__(self, prompt: str) -> str:
        self.prompts.append(prompt)
        assert self.answers, "asked more questions than scripted"
        answer = self.answers.pop(0)
        if isinstance(answer, BaseException):
            raise answer
        return answer


def review(
    text: str,
    script: Script,
    *,
    unsafe_fixes: bool = True,
    color: bool = False,
    check: Callable[[str], Sequence[Diagnostic]] = engine_check,
    first: Sequence[Diagnostic] | None = None,
) -> tuple[Review, list[str]]:
    """`review_file` of `text` as NAME with the scripted answers, and the blocks it said."""
    said: list[str] = []
    result = review_file(
        NAME, text, check, script, said.append, unsafe_fixes=unsafe_fixes, color=color, first=first
    )
    return result, said


def replayed(text: str, result: Review) -> str:
    """`text` with the accepted fixes' edits applied in order, as the review saw each one."""
    return functools.reduce(lambda t, d: apply_edits(t, d.edits), result.applied, text)


def places(diagnostics: Sequence[Diagnostic]) -> list[tuple[str, int]]:
    return [(d.code, d.line) for d in diagnostics]


def test_yes_applies_the_fix_shown_with_its_finding_rule_and_diff() -> None:
    script = Script("y")
    result, said = review(MIXED, script, unsafe_fixes=False)
    assert script.prompts == [PROMPT]
    assert result.text == fix_text(MIXED, RULES).text != MIXED
    assert (places(result.applied), result.quit) == ([("JF102", 16)], False)
    assert places(result.remaining) == [("JF101", 11)]
    [shown] = said
    lines = shown.splitlines()
    assert lines[0].startswith(f"{NAME}:16:1: JF102 `functools.lru_cache` caches `f`")
    assert lines[1] == f"fix (safe): {result.applied[0].fix_title}"
    assert lines[2:4] == [f"--- a/{NAME}", f"+++ b/{NAME}"]
    assert {"-import functools", "-@functools.lru_cache"} <= set(lines[4:])


@pytest.mark.parametrize(("unsafe_fixes", "asked"), [(False, 1), (True, 2)])
def test_unsafe_fixes_are_offered_only_with_unsafe_fixes(unsafe_fixes: bool, asked: int) -> None:
    script = Script(*["n"] * asked)
    result, said = review(MIXED, script, unsafe_fixes=unsafe_fixes)
    assert len(script.prompts) == asked
    assert any("JF101" in block for block in said) is unsafe_fixes
    assert (result.text, result.applied) == (MIXED, [])
    assert places(result.remaining) == [("JF101", 12), ("JF102", 16)]


def test_all_applies_this_and_every_later_fix_asking_once() -> None:
    script = Script("a")
    result, said = review(TWINS, script)
    assert script.prompts == [PROMPT]
    assert result.text == fix_text(TWINS, RULES, unsafe_fixes=True).text
    assert result.text == replayed(TWINS, result)
    assert [d.code for d in result.applied] == ["JF101", "JF101"]
    assert (result.remaining, result.quit) == ([], False)
    assert [block.split(": ")[1].split()[0] for block in said] == ["JF101", "JF101"]


@pytest.mark.parametrize(("answer", "quit"), [("d", False), ("q", True)])
def test_done_and_quit_stop_asking_and_keep_the_accepted_fixes(answer: str, quit: bool) -> None:
    script = Script("y", answer)
    result, _ = review(TWINS, script)
    assert len(script.prompts) == 2
    assert result.quit is quit
    assert places(result.applied) == [("JF101", 12)]
    assert result.text == replayed(TWINS, result) != TWINS
    assert places(result.remaining) == places(engine_check(result.text))
    assert len(result.remaining) == 1


@pytest.mark.parametrize("end", [EOFError(), KeyboardInterrupt()], ids=["eof", "ctrl-c"])
def test_end_of_input_is_quit_keeping_what_was_accepted(end: BaseException) -> None:
    script = Script("y", end)
    result, _ = review(TWINS, script)
    assert (len(script.prompts), result.quit) == (2, True)
    assert places(result.applied) == [("JF101", 12)]
    assert result.text == replayed(TWINS, result)


def test_no_declines_every_fix_and_keeps_the_text() -> None:
    result, _ = review(TWINS, Script("n", "N "))
    assert (result.text, result.applied, result.quit) == (TWINS, [], False)
    assert places(result.remaining) == [("JF101", 12), ("JF101", 22)]


def test_empty_or_unknown_answers_ask_again_with_a_hint() -> None:
    script = Script("", "maybe", "yy", "  YES ")
    result, said = review(MIXED, script, unsafe_fixes=False)
    assert script.prompts == [PROMPT] * 4
    assert said[1:] == [HINT] * 3
    assert places(result.applied) == [("JF102", 16)]


@pytest.mark.parametrize(
    ("text", "accepted", "shift"),
    [(TWINS, ("JF101", 22), 1), (MIXED, ("JF102", 16), -1)],
    ids=["look-alike-below-adds-an-import", "fix-below-removes-an-import"],
)
def test_a_declined_finding_is_not_offered_again_after_a_fix_moves_it(
    text: str, accepted: tuple[str, int], shift: int
) -> None:
    script = Script("n", "y")  # declines the JF101 of line 12; a third question would fail
    result, _ = review(text, script)
    assert len(script.prompts) == 2
    assert places(result.applied) == [accepted]
    assert places(result.remaining) == [("JF101", 12 + shift)]
    assert source_lines(result.text)[11 + shift] == source_lines(text)[11]


def test_declined_look_alike_leaves_the_other_offered() -> None:
    first, second = engine_check(TWINS)
    assert (first.code, first.message) == (second.code, second.message)
    result, _ = review(TWINS, Script("n", "y"))
    assert places(result.applied) == [("JF101", 22)]
    assert result.text == replayed(TWINS, result)


def test_findings_already_computed_spare_the_first_check() -> None:
    calls: list[str] = []

    def counted(text: str) -> Sequence[Diagnostic]:
        calls.append(text)
        return engine_check(text)

    result, _ = review(MIXED, Script("n", "y"), check=counted, first=engine_check(MIXED))
    assert calls == [result.text]  # only the re-check after the accepted fix
    assert places(result.applied) == [("JF102", 16)]


@pytest.mark.parametrize("color", [False, True])
def test_the_diff_is_colored_when_asked(color: bool) -> None:
    _, said = review(MIXED, Script("n"), unsafe_fixes=False, color=color)
    assert ("\x1b[" in said[0]) is color


def _finding(edit: TextEdit) -> Diagnostic:
    return Diagnostic(
        "JF102", "cache-on-traced", "m", 1, 0, 1, 1, "t", FixSafety.SAFE, edits=(edit,)
    )


def test_a_fix_that_changes_nothing_is_skipped_without_asking() -> None:
    same = _finding(TextEdit(1, 0, 1, 1, "x"))
    result, said = review("x = 1\n", Script(), check=lambda text: [same])
    assert (result.text, result.applied) == ("x = 1\n", [])
    assert said == [f"{NAME}:1:1: JF102 m [*]\nIts fix changes nothing: skipped."]


def test_a_finding_that_keeps_coming_back_stops_the_review() -> None:
    again = _finding(TextEdit(2, 0, 2, 0, "y = 2\n"))  # appends a line; the finding stays
    script = Script("a")
    result, said = review("x = 1\n", script, check=lambda text: [again])
    assert len(script.prompts) == 1
    assert len(result.applied) == 1 + EXTRA_DECISIONS
    assert result.text == "x = 1\n" + "y = 2\n" * (1 + EXTRA_DECISIONS)
    assert said[-1] == f"{NAME}: stopped after 11 fixes and answers: the fixes do not converge."
