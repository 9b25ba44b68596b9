"""The per-fix review of `jaxfix apply --interactive`: one fix at a time, with its finding, rule
and diff, and a question; the file is re-checked after each accepted fix.

Free of terminal I/O: the CLI passes `ask` (reads one answer) and `say` (prints one block), so
that tests drive the loop with scripted answers. Each accepted fix is a complete rewrite of the
text, so whatever ends the review (`d`, `q`, the end of input, Ctrl-C at the prompt) leaves a
text with every accepted fix and nothing half-applied.

A declined finding is remembered by its code, message and place in the text, and that place is
carried through the edits of every fix accepted later: the finding is never offered again
though the fixes move it, and a look-alike elsewhere still is. A finding whose text an accepted
fix rewrites is a new finding (the user has not seen it in this form).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from jaxfix.models.diagnostic import Diagnostic, TextEdit
from jaxfix.models.edits import apply_edits, line_starts, offset
from jaxfix.report.output import finding_line, unified_diff

PROMPT = "Apply this fix? [y]es, [n]o, [a]ll in this file, [d]one with this file, [q]uit: "
HINT = "Please answer y, n, a, d or q."
ANSWERS = {word: word[0] for word in ("y", "yes", "n", "no", "a", "all", "d", "done", "q", "quit")}
# Answers (and automatic `a` applications) allowed beyond the fixes first offered: a fix may
# reveal a new finding, but one that brings its own finding back must not loop forever.
EXTRA_DECISIONS = 10


@dataclass
class Review:
    """What the review of one file decided."""

    text: str  # the file's text after the accepted fixes
    applied: list[Diagnostic]  # the findings whose fix was accepted, in order
    quit: bool  # the user pressed q (the CLI stops asking about other files)
    remaining: list[Diagnostic]  # the findings of `text`, from the last check


@dataclass(frozen=True)
class _Mark:
    """A finding's identity in one version of the text: code, message and character span."""

    code: str
    message: str
    start: int
    end: int


def review_file(
    display: str,
    text: str,
    check: Callable[[str], Sequence[Diagnostic]],
    ask: Callable[[str], str],
    say: Callable[[str], None],
    *,
    unsafe_fixes: bool,
    color: bool,
    first: Sequence[Diagnostic] | None = None,
    elsewhere: Callable[[Diagnostic], str] = lambda diagnostic: "",
) -> Review:
    """Offer each allowed fix of `text`'s findings in turn; `check` re-checks the text after
    each accepted fix and must fill `edits`; `first` are the findings of `text` when the caller
    has them already; `elsewhere` gives the diff of what a finding's fix changes in other
    files (`Diagnostic.moves`), shown with it: the caller applies those changes with the
    fixes it accepts (`Review.applied`). `say` gets blocks without a final newline."""
    review = Review(text, [], False, list(check(text) if first is None else first))
    declined: set[_Mark] = set()
    limit = sum(_offered(d, unsafe_fixes) for d in review.remaining) + EXTRA_DECISIONS
    apply_all = False
    for _ in range(limit):
        current = _next_offer(review, declined, unsafe_fixes)
        if current is None:
            return review
        fixed = apply_edits(review.text, current.edits)
        if fixed == review.text:
            line = finding_line(display, current, unsafe_fixes=True)
            say(f"{line}\nIts fix changes nothing: skipped.")
            declined.add(_mark(line_starts(review.text), current))
            continue
        say(_render(display, review.text, fixed, current, color) + elsewhere(current))
        answer = "y" if apply_all else _answer(ask, say)
        if answer in ("d", "q"):
            review.quit = answer == "q"
            return review
        if answer == "n":
            declined.add(_mark(line_starts(review.text), current))
            continue
        apply_all = apply_all or answer == "a"
        declined = _carried(declined, review.text, current.edits)
        review.text, review.remaining = fixed, list(check(fixed))
        review.applied.append(current)
    if _next_offer(review, declined, unsafe_fixes) is not None:
        say(f"{display}: stopped after {limit} fixes and answers: the fixes do not converge.")
    return review


def _offered(diagnostic: Diagnostic, unsafe_fixes: bool) -> bool:
    """Whether the review offers this finding's fix: it has edits and its safety applies."""
    safety = diagnostic.fix_safety
    return bool(diagnostic.edits) and safety is not None and safety.applies(unsafe_fixes)


def _next_offer(review: Review, declined: set[_Mark], unsafe_fixes: bool) -> Diagnostic | None:
    """The first finding of the current text whose fix is offered and was not declined."""
    starts = line_starts(review.text)
    for diagnostic in review.remaining:
        if _offered(diagnostic, unsafe_fixes) and _mark(starts, diagnostic) not in declined:
            return diagnostic
    return None


def _render(display: str, before: str, after: str, diagnostic: Diagnostic, color: bool) -> str:
    """The finding, its fix's safety and title, and the diff of that one fix."""
    assert diagnostic.fix_safety is not None, "only findings with a fix are offered"
    diff = unified_diff(display, before, after, color).rstrip("\n")
    return (
        f"{finding_line(display, diagnostic, unsafe_fixes=True)}\n"  # offered: made if accepted
        f"fix ({diagnostic.fix_safety.value}): {diagnostic.fix_title}\n{diff}"
    )


def _answer(ask: Callable[[str], str], say: Callable[[str], None]) -> str:
    """y, n, a, d or q (or the word), in any case: re-asks until the answer is one of them.
    The end of input and Ctrl-C mean q."""
    while True:
        try:
            answer = ask(PROMPT).strip().lower()
        except (EOFError, KeyboardInterrupt):
            return "q"
        if answer in ANSWERS:
            return ANSWERS[answer]
        say(HINT)


def _mark(starts: Sequence[int], diagnostic: Diagnostic) -> _Mark:
    start = offset(starts, diagnostic.line, diagnostic.column)
    end = offset(starts, diagnostic.end_line, diagnostic.end_column)
    return _Mark(diagnostic.code, diagnostic.message, start, end)


def _carried(marks: set[_Mark], text: str, edits: Sequence[TextEdit]) -> set[_Mark]:
    """`marks` of `text` moved to their places in `apply_edits(text, edits)`; a mark whose span
    an edit rewrites (or inserts into) is dropped."""
    starts = line_starts(text)
    spans = [
        (offset(starts, e.line, e.column), offset(starts, e.end_line, e.end_column), e.new_text)
        for e in edits
    ]
    carried: set[_Mark] = set()
    for mark in marks:
        if any(mark.start < end and start < mark.end for start, end, _ in spans):
            continue
        shift = sum(len(new) - (end - start) for start, end, new in spans if end <= mark.start)
        carried.add(_Mark(mark.code, mark.message, mark.start + shift, mark.end + shift))
    return carried
