"""`add_suppressions` (the engine of `check --add-ignore`), judged by the real engine: what it
writes compiles, silences every finding it claims to, changes nothing on a second run, and
touches only the lines with findings."""

from __future__ import annotations

import difflib
import re
import textwrap
from collections import Counter

import pytest

from jaxfix.models.diagnostic import Diagnostic
from jaxfix.models.edits import source_lines
from jaxfix.proofs.cases import Case, load_cases
from jaxfix.rules.registry import all_rules
from jaxfix.rules.suppression import UNUSED_CODE
from jaxfix.run.add_ignore import add_suppressions
from jaxfix.run.engine import check_text
from tests.memo import checked

RULES = all_rules()
OWN_LINE = re.compile(r"[ \t\f]*# jaxfix: ignore\[[^\]]*\]( -- .*)?\Z")

HEAD = "import functools\nimport pickle\n\nimport jax\n\nBLOBS = []\n\n\n@jax.jit\ndef step(x):\n"


def program(body: str) -> str:
    """A module whose jitted `step` runs `body` (written unindented)."""
    return HEAD + textwrap.indent(textwrap.dedent(body), "    ", lambda line: True)


def unused(diagnostics: list[Diagnostic]) -> list[str]:
    return sorted(d.message for d in diagnostics if d.code == UNUSED_CODE)


def suppress(text: str, reason: str | None = None) -> tuple[str, list[Diagnostic]]:
    """Suppress what `check_text` finds in `text`, checking the result (see `suppress_found`)."""
    return suppress_found(text, check_text(text, RULES, filename="t.py"), reason)


def suppress_found(
    text: str, found: list[Diagnostic], reason: str | None = None
) -> tuple[str, list[Diagnostic]]:
    """Suppress `found` in `text`, and check the result: it compiles, reports only the skipped
    findings and the unused suppressions already there (but the comments naming no rule that
    it filled in), and a second run changes nothing."""
    new, skipped = add_suppressions(text, found, reason)
    compile(new, "t.py", "exec", dont_inherit=True)
    remaining = check_text(new, RULES, filename="t.py")
    assert [d.code for d in remaining if d.code != UNUSED_CODE] == [d.code for d in skipped]
    filled = Counter(unused(found)) - Counter(unused(remaining))
    assert all("without rules silences nothing; name them" in message for message in filled)
    assert not Counter(unused(remaining)) - Counter(unused(found))
    assert add_suppressions(new, remaining, reason) == (new, skipped)
    return new, skipped


def changed_lines(before: str, after: str) -> set[int]:
    """The lines of `before` (1-based) that `after` changes; asserts that every line `after`
    adds is a suppression comment alone on its line."""
    old, new = source_lines(before), source_lines(after)
    changed: set[int] = set()
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        added = [line for line in new[j1:j2] if OWN_LINE.match(line.rstrip("\r\n"))]
        assert len(added) >= (j2 - j1) - (i2 - i1), f"lines {new[j1:j2]} replace {old[i1:i2]}"
        changed.update(range(i1 + 1, i2 + 1))
    return changed


@pytest.mark.parametrize("case", load_cases(), ids=lambda c: c.id)
def test_every_fixture_is_suppressed(case: Case) -> None:
    before = case.before.read_text()
    found = checked(before, RULES)  # shared with the other tests of the fixtures
    after, skipped = suppress_found(before, found)
    assert skipped == []
    assert changed_lines(before, after) <= {d.line for d in found if d.code != UNUSED_CODE}
    assert (after == before) == all(d.code == UNUSED_CODE for d in found)


@pytest.mark.parametrize(
    ("before", "after"),
    [
        pytest.param(
            "BLOBS.append(pickle.dumps(x))\nreturn x\n",
            "BLOBS.append(pickle.dumps(x))  # jaxfix: ignore[JF101]\nreturn x\n",
            id="end-of-line",
        ),
        pytest.param(
            "BLOBS.append(pickle.dumps(x))   \t\nreturn x\n",
            "BLOBS.append(pickle.dumps(x))  # jaxfix: ignore[JF101]\nreturn x\n",
            id="trailing-whitespace-replaced",
        ),
        pytest.param(
            "BLOBS.append(\n    pickle.dumps(x)\n)\nreturn x\n",
            "BLOBS.append(\n    pickle.dumps(x)  # jaxfix: ignore[JF101]\n)\nreturn x\n",
            id="middle-of-a-multi-line-call",
        ),
        pytest.param(
            "BLOBS.append(pickle.dumps(x) + b'''a\nb''')\nreturn x\n",
            "# jaxfix: ignore[JF101]\nBLOBS.append(pickle.dumps(x) + b'''a\nb''')\nreturn x\n",
            id="line-ends-in-a-triple-quoted-string",
        ),
        pytest.param(
            "BLOBS.append('''a\n''' + str(pickle.dumps(x)))\nreturn x\n",
            "BLOBS.append('''a\n''' + str(pickle.dumps(x)))  # jaxfix: ignore[JF101]\nreturn x\n",
            id="line-starts-in-a-triple-quoted-string",
        ),
        pytest.param(
            "y = pickle.dumps(x) + \\\n    b'z'\nreturn x\n",
            "# jaxfix: ignore[JF101]\ny = pickle.dumps(x) + \\\n    b'z'\nreturn x\n",
            id="backslash-on-the-line",
        ),
        pytest.param(
            "y = 1 + \\\n    len(pickle.dumps(x))\nreturn x\n",
            "y = 1 + \\\n    len(pickle.dumps(x))  # jaxfix: ignore[JF101]\nreturn x\n",
            id="backslash-above",
        ),
        pytest.param(
            "if x.ndim:\n    BLOBS.append(pickle.dumps(x) + \\\n        b'z')\nreturn x\n",
            "if x.ndim:\n    # jaxfix: ignore[JF101]\n    BLOBS.append(pickle.dumps(x) + \\\n"
            "        b'z')\nreturn x\n",
            id="inserted-line-takes-the-indentation",
        ),
        pytest.param(
            "BLOBS.append(pickle.dumps(x))  # jaxfix: ignore[JF102] -- old\nreturn x\n",
            "BLOBS.append(pickle.dumps(x))  # jaxfix: ignore[JF102, JF101] -- old\nreturn x\n",
            id="merged-into-a-jaxfix-comment-its-reason-kept",
        ),
        pytest.param(
            "# jaxfix: ignore[cache-on-traced]\nBLOBS.append(pickle.dumps(x))\nreturn x\n",
            "# jaxfix: ignore[cache-on-traced, JF101]\nBLOBS.append(pickle.dumps(x))\nreturn x\n",
            id="merged-into-a-jaxfix-comment-above",
        ),
        pytest.param(
            "BLOBS.append(pickle.dumps(x))  # jaxfix: ignore[]\nreturn x\n",
            "BLOBS.append(pickle.dumps(x))  # jaxfix: ignore[JF101]\nreturn x\n",
            id="merged-into-empty-brackets",
        ),
        pytest.param(
            "BLOBS.append(pickle.dumps(x))  # noqa: E501\nreturn x\n",
            "BLOBS.append(pickle.dumps(x))  # noqa: E501  # jaxfix: ignore[JF101]\nreturn x\n",
            id="after-a-noqa-of-another-linter",
        ),
        pytest.param(
            "BLOBS.append(pickle.dumps(x))  # type: ignore\nreturn x\n",
            "BLOBS.append(pickle.dumps(x))  # type: ignore  # jaxfix: ignore[JF101]\nreturn x\n",
            id="after-type-ignore",
        ),
        pytest.param(
            "BLOBS.append(pickle.dumps(x))  # noqa: JF102\nreturn x\n",
            "# jaxfix: ignore[JF101]\nBLOBS.append(pickle.dumps(x))  # noqa: JF102\nreturn x\n",
            id="above-when-appending-would-hide-a-jf-noqa",
        ),
        pytest.param(
            "BLOBS.append(pickle.dumps(x)  # jaxfix: ignore[JF102\n)\nreturn x\n",
            "# jaxfix: ignore[JF101]\nBLOBS.append(pickle.dumps(x)  # jaxfix: ignore[JF102\n)\n"
            "return x\n",
            id="above-when-an-unclosed-bracket-would-swallow-the-codes",
        ),
        pytest.param(
            "# noqa: E501\nBLOBS.append(pickle.dumps(x) + b'''a\nb''')\nreturn x\n",
            "# noqa: E501\n# jaxfix: ignore[JF101]\nBLOBS.append(pickle.dumps(x) + b'''a\nb''')\n"
            "return x\n",
            id="above-below-a-comment-that-suppresses-nothing-here",
        ),
        pytest.param(
            "BLOBS.append(pickle.dumps(x)); BLOBS.append(pickle.dumps(x))\nreturn x\n",
            "BLOBS.append(pickle.dumps(x)); BLOBS.append(pickle.dumps(x))"
            "  # jaxfix: ignore[JF101]\nreturn x\n",
            id="two-findings-one-comment",
        ),
        pytest.param(
            "s = 'é😀'; π = pickle.dumps(x)\nreturn x\n",
            "s = 'é😀'; π = pickle.dumps(x)  # jaxfix: ignore[JF101]\nreturn x\n",
            id="unicode-before-the-finding",
        ),
    ],
)
def test_placement(before: str, after: str) -> None:
    assert suppress(program(before)) == (program(after), [])


@pytest.mark.parametrize(
    "body",
    [
        pytest.param(
            "y = 1 + \\\n    len(pickle.dumps(x)) + \\\n    2\nreturn x\n",
            id="backslash-above-and-on-the-line",
        ),
        pytest.param(
            "BLOBS.append('''a\n''' + str(pickle.dumps(x)) + '''b\n''')\nreturn x\n",
            id="in-a-string-above-and-at-the-end",
        ),
        pytest.param(
            "# noqa: JF102\nBLOBS.append(pickle.dumps(x) + b'''a\nb''')\nreturn x\n",
            id="a-line-above-would-retarget-a-noqa",
        ),
    ],
)
def test_no_valid_place_is_skipped(body: str) -> None:
    text = program(body)
    found = check_text(text, RULES)
    assert [d.code for d in found] == ["JF101"]
    assert suppress(text) == (text, found)


def test_cache_decorator_and_body_lines() -> None:
    text = HEAD.replace("@jax.jit\n", "@functools.lru_cache\n@jax.jit\n") + "    return x\n"
    text += "\n\n@jax.jit\ndef g(x):\n    return pickle.dumps(x)\n"
    new, _ = suppress(text)
    assert "@functools.lru_cache  # jaxfix: ignore[JF102]\n" in new
    assert "    return pickle.dumps(x)  # jaxfix: ignore[JF107]\n" in new
    assert changed_lines(text, new) == {9, 17}


def test_line_endings_are_kept() -> None:
    body = "BLOBS.append(pickle.dumps(x))\nBLOBS.append(pickle.dumps(x) + b'''a\nb''')\nreturn x\n"
    text = program(body).replace("\n", "\r\n")
    new, skipped = suppress(text)
    assert skipped == []
    assert new.count("\r\n") == text.count("\r\n") + 1 and "\n" not in new.replace("\r\n", "")
    assert "(x))  # jaxfix: ignore[JF101]\r\n    # jaxfix: ignore[JF101]\r\n    BLOBS" in new


def test_inserted_line_ends_like_the_line_above_it() -> None:
    text = program("x = x\r\nBLOBS.append(pickle.dumps(x) + b'''a\nb''')\nreturn x\n")
    new, _ = add_suppressions(text, check_text(text, RULES))
    assert "x = x\r\n    # jaxfix: ignore[JF101]\r\n    BLOBS" in new
    assert new.replace("    # jaxfix: ignore[JF101]\r\n", "") == text


def test_cr_line_endings() -> None:
    text = program("BLOBS.append(pickle.dumps(x))\nreturn x\n").replace("\n", "\r")
    new, _ = add_suppressions(text, check_text(text, RULES))
    assert new == text.replace("(x))\r", "(x))  # jaxfix: ignore[JF101]\r")
    suppress(text)


def test_missing_final_newline() -> None:
    text = "import pickle\nimport jax\n\nf = jax.jit(lambda x: print(pickle.dumps(x)))"
    assert suppress(text) == (f"{text}  # jaxfix: ignore[JF101]", [])
    spanning = f"{text[:-2]} + b'''a\nb'''))"
    assert suppress(spanning)[0] == spanning.replace("f = ", "# jaxfix: ignore[JF101]\nf = ")


@pytest.mark.parametrize("reason", ["adopted 2026-12", "  see [#12] ", "gelöst später"])
def test_reason(reason: str) -> None:
    text = program("BLOBS.append(pickle.dumps(x) + b'''a\nb''')\nreturn pickle.dumps(x)\n")
    new, _ = suppress(text, reason)
    tail = f" -- {reason.strip()}\n"
    assert f"    # jaxfix: ignore[JF101]{tail}" in new
    assert f"    return pickle.dumps(x)  # jaxfix: ignore[JF107]{tail}" in new


@pytest.mark.parametrize("reason", ["", "  ", "two\nlines", "a\rb", "tab\there", "nul\x00"])
def test_unsafe_reason_is_rejected(reason: str) -> None:
    text = program("return pickle.dumps(x)\n")
    with pytest.raises(ValueError, match="reason"):
        add_suppressions(text, check_text(text, RULES), reason)


def test_unused_suppressions_are_left_alone() -> None:
    text = program("y = x * 2  # jaxfix: ignore[JF101]\nreturn y\n")
    found = check_text(text, RULES)
    assert [d.code for d in found] == [UNUSED_CODE]
    assert add_suppressions(text, found, "r") == (text, [])


def test_a_finding_beyond_the_text_is_rejected() -> None:
    text = program("return pickle.dumps(x)\n")
    found = check_text(text, RULES)
    with pytest.raises(ValueError, match="line"):
        add_suppressions(text[: text.rindex("    return")], found)


def test_each_finding_of_one_text_is_suppressed_on_its_own() -> None:
    """The language server asks for one finding's suppression at a time, on the same text:
    each answer holds that finding's comment only (nothing of an earlier answer)."""
    text = HEAD.replace("@jax.jit\n", "@functools.lru_cache\n@jax.jit\n") + "    return x\n"
    text += "\n\n@jax.jit\ndef g(x):\n    return pickle.dumps(x)\n"
    found = check_text(text, RULES)
    assert [d.code for d in found] == ["JF102", "JF107"]
    answers = [add_suppressions(text, [d]) for d in [*found, *found]]
    for (new, skipped), d in zip(answers, [*found, *found], strict=True):
        assert skipped == []
        assert changed_lines(text, new) == {d.line}
        assert f"# jaxfix: ignore[{d.code}]" in source_lines(new)[d.line - 1]
