"""Suppression comments that name no rule: `# jaxfix: ignore` and `# jaxfix: ignore[]` silence
nothing and are reported as JF001 with the codes to name (docs/usage.md, "Suppressing a
finding")."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from jaxfix.cli import main
from jaxfix.rules import suppression
from jaxfix.rules.registry import all_rules, select_rules
from jaxfix.run.add_ignore import add_suppressions
from jaxfix.run.engine import check_text
from tests.documents import section

HEAD = "import pickle\n\nimport jax\n\nBLOBS = []\n\n\n@jax.jit\ndef step(x):\n"
BARE = "unused suppression: `jaxfix: ignore` without rules silences nothing"


def program(body: str) -> str:
    """A module whose jitted `step` runs `body` (written unindented); its first line is 10."""
    return HEAD + textwrap.indent(textwrap.dedent(body), "    ")


def found(text: str, ignore: tuple[str, ...] = ()) -> list[tuple[int, str, str]]:
    rules = select_rules((), ignore)
    return [(d.line, d.code, d.message) for d in check_text(text, rules, filename="t.py")]


@pytest.mark.parametrize(
    "comment",
    ["# jaxfix: ignore", "# jaxfix: ignore[]", "# jaxfix:ignore  -- why", "# jaxfix: ignore JF101"],
)
def test_a_comment_naming_no_rule_silences_nothing_and_says_what_to_name(comment: str) -> None:
    text = program(f"BLOBS.append(pickle.dumps(x))  {comment}\nreturn x\n")
    (finding, unused) = found(text)
    assert finding[:2] == (10, "JF101")
    assert unused == (10, "JF001", f"{BARE}; name them: `# jaxfix: ignore[JF101]`")


def test_a_bare_comment_alone_on_its_line_covers_the_next_line() -> None:
    text = program("# jaxfix: ignore -- reviewed\nBLOBS.append(pickle.dumps(x))\nreturn x\n")
    assert [(line, code) for line, code, _ in found(text)] == [(10, "JF001"), (11, "JF101")]
    assert found(text)[0][2] == f"{BARE}; name them: `# jaxfix: ignore[JF101]`"


def test_a_bare_comment_without_a_finding_is_reported_without_codes() -> None:
    assert found(program("y = x  # jaxfix: ignore\nreturn y\n")) == [(10, "JF001", BARE)]


def test_ignoring_jf001_does_not_turn_a_bare_comment_into_a_blanket_suppression() -> None:
    text = program("BLOBS.append(pickle.dumps(x))  # jaxfix: ignore\nreturn x\n")
    assert [code for _, code, _ in found(text, ignore=("JF001",))] == ["JF101"]


@pytest.mark.parametrize(
    "comment", ["# jaxfix: ignore-me", "# jaxfix: ignored", "# noqan", "# jaxfix ignore"]
)
def test_other_comments_are_not_suppressions(comment: str) -> None:
    text = program(f"BLOBS.append(pickle.dumps(x))  {comment}\nreturn x\n")
    assert [code for _, code, _ in found(text)] == ["JF101"]


def test_add_ignore_gives_a_bare_comment_the_codes_it_lacks() -> None:
    text = program("BLOBS.append(pickle.dumps(x))  # jaxfix: ignore -- reviewed\nreturn x\n")
    fixed, skipped = add_suppressions(text, check_text(text, all_rules(), filename="t.py"))
    assert skipped == []
    assert fixed == text.replace("ignore --", "ignore[JF101] --")
    assert found(fixed) == []


def test_the_readme_shows_what_check_prints_for_a_bare_comment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shown_in = section("Suppressing a finding")
    start = shown_in.index("```text\n") + len("```text\n")
    shown = shown_in[start : shown_in.index("\n```", start)].splitlines()
    (tmp_path / "step.py").write_text(
        program("BLOBS.append(pickle.dumps(x))  # jaxfix: ignore\nreturn x\n"), encoding="utf-8"
    )
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["check", "--no-cache", "step.py"])
    assert [line for line in result.stdout.splitlines() if not line.startswith(" ")] == shown


@pytest.mark.parametrize(
    ("comment", "codes"),
    [("# noqa: F401", ["JF101"]), ("# NOQA: E501, JF101", []), ("# noqa: jf101", ["JF101"])],
)
def test_only_a_noqa_naming_a_jaxfix_code_counts(comment: str, codes: list[str]) -> None:
    """Other linters' codes are theirs; a jaxfix code counts as it is written (upper case)."""
    text = program(f"BLOBS.append(pickle.dumps(x))  {comment}\nreturn x\n")
    assert [code for _, code, _ in found(text)] == codes


def test_comments_are_read_only_in_files_that_may_name_jaxfix() -> None:
    assert suppression.find("import os  # noqa: F401\n") == []
    assert [s.selector for s in suppression.find("x = 1  # noqa: E501, JF101\n")] == [
        "E501",
        "JF101",
    ]


# A bare `# noqa`, `ignore-file`, a definition's header, a misspelt code (#54)


@pytest.mark.parametrize("comment", ["# noqa", "# NOQA -- reviewed", "#noqa", "# noqa: JF101"])
def test_a_noqa_silences_the_finding_on_its_line_and_is_never_reported(comment: str) -> None:
    text = program(f"BLOBS.append(pickle.dumps(x))  {comment}\nreturn x\n")
    assert found(text) == []
    assert found(program(f"y = x  {comment}\nreturn y\n")) == []  # silences nothing: not JF001


@pytest.mark.parametrize(
    ("comment", "codes"),
    [
        ("# jaxfix: ignore-file", []),
        ("# jaxfix: ignore-file[JF101] -- legacy", []),
        ("# jaxfix: ignore-file[serialize-in-traced]", []),
        ("# jaxfix: ignore-file[JF102]", ["JF001", "JF101"]),
    ],
)
def test_ignore_file_silences_its_rules_in_the_whole_file(comment: str, codes: list[str]) -> None:
    text = f"{comment}\n" + program("BLOBS.append(pickle.dumps(x))\nreturn x\n")
    assert [code for _, code, _ in found(text)] == codes


def test_an_ignore_on_a_definition_header_covers_its_body_only() -> None:
    body = "BLOBS.append(pickle.dumps(x))\nreturn x\n"
    text = program(body).replace("def step(x):", "def step(x):  # jaxfix: ignore[JF101]")
    after = "\n\n@jax.jit\ndef other(x):\n" + textwrap.indent(body, "    ")
    assert found(text) == []
    assert [(line, code) for line, code, _ in found(text + after)] == [(16, "JF101")]
    classy = "import pickle\nimport jax\nclass A:  # jaxfix: ignore[JF101]\n    @jax.jit\n"
    method = "    def f(self, x):\n        BLOBS.append(pickle.dumps(x))\n        return x\n"
    assert found("BLOBS = []\n" + classy + method) == []


def test_an_ignore_on_a_definition_that_silences_nothing_is_reported_once() -> None:
    text = program("return x\n").replace("def step(x):", "def step(x):  # jaxfix: ignore[JF101]")
    assert [(line, code) for line, code, _ in found(text)] == [(9, "JF001")]


def test_a_misspelt_code_gets_a_did_you_mean() -> None:
    text = program("BLOBS.append(pickle.dumps(x))  # jaxfix: ignore[JF1O1]\nreturn x\n")
    messages = [message for _, code, message in found(text) if code == "JF001"]
    assert messages == ["unused suppression: `JF1O1` is not a jaxfix rule (did you mean `JF101`?)"]


def test_ignore_file_on_a_definition_header_still_covers_the_whole_file() -> None:
    text = "def f():  # jaxfix: ignore-file[JF101]\n    pass\n" + program(
        "BLOBS.append(pickle.dumps(x))\nreturn x\n"
    )
    assert found(text) == []
