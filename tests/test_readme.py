"""The README and docs/ show real output: every `$ jaxfix ...` console block of README.md and
docs/*.md is re-run and compared (`scripts/readme_output.py` rewrites them); their links lead
somewhere; the README's set-up commands are the ones CI runs."""

from __future__ import annotations

import os
import re
import shlex
import sys
import tomllib
from urllib.parse import unquote

import pytest
from click.testing import CliRunner

from jaxfix.cli import main
from tests.documents import PAGES, ROOT, anchors, console_blocks, section, text

README = text("README.md")
BLOCKS = console_blocks()


def test_readme_has_console_examples() -> None:
    assert len([page for page, _, _ in BLOCKS if page == "README.md"]) >= 2


def test_the_docs_pages_are_read() -> None:
    """The pages the README's text moved to are among those whose blocks are checked."""
    assert {"docs/usage.md", "docs/integration.md", "docs/reliability.md"} <= set(PAGES)
    assert {page for page, _, _ in BLOCKS} >= {"README.md", "docs/usage.md", "docs/reliability.md"}


# `jaxfix verify` runs fixture programs under jax, and names the interpreter it runs them with.
PYTHON_SHOWN = ".venv/bin/python"
CASES = [
    pytest.param(
        command,
        expected,
        id=f"{page}: {command}",
        marks=[pytest.mark.jax] if command.startswith("jaxfix verify") else [],
    )
    for page, command, expected in BLOCKS
]


def test_readme_shows_a_verify_run() -> None:
    assert any(command.startswith("jaxfix verify") for _, command, _ in BLOCKS)


@pytest.mark.parametrize("command, expected", CASES)
def test_console_block_is_real_output(command: str, expected: str) -> None:
    previous = os.getcwd()
    os.chdir(ROOT)
    try:
        result = CliRunner().invoke(main, shlex.split(command)[1:])
    finally:
        os.chdir(previous)
    shown = (result.stdout + result.stderr).replace(sys.executable, PYTHON_SHOWN)
    assert shown == expected


def test_readme_states_the_python_version_pyproject_requires() -> None:
    with (ROOT / "pyproject.toml").open("rb") as file:
        required = tomllib.load(file)["project"]["requires-python"]
    assert required.startswith(">=")
    assert f"Python {required[2:]} or later" in section("Set up")


def test_the_readme_set_up_runs_what_ci_runs() -> None:
    """The Set up section's two commands: the example run, and the test command `.ci/run` runs
    word for word (after `cd` to the checkout)."""
    commands = re.findall(r"```sh\n(.*?)\n```", section("Set up"), re.S)
    assert len(commands) == 2
    example, tests = commands
    install, run = example.rsplit(" && .venv/bin/", 1)
    assert install == "python3 -m venv .venv && .venv/bin/pip install -q -e ."
    # The example's output is a README console block, so the test above runs it.
    assert run in [command for page, command, _ in BLOCKS if page == "README.md"]
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert tests in ci


# [text](target): the target up to its first space or `)`; images and absolute URLs are skipped.
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)(?:\s[^)]*)?\)")


def links(page: str) -> list[str]:
    """Relative link targets of a page, code spans and fences left out."""
    body = re.sub(r"^```.*?^```", "", text(page), flags=re.S | re.M)
    body = re.sub(r"`[^`\n]*`", "", body)
    return [t for t in LINK.findall(body) if not re.match(r"[a-z][a-z0-9+.-]*:", t)]


@pytest.mark.parametrize("page", PAGES)
def test_relative_links_lead_to_files_and_headings(page: str) -> None:
    broken = []
    for target in links(page):
        path, _, anchor = target.partition("#")
        file = (ROOT / page).parent / unquote(path) if path else ROOT / page
        if not file.exists():
            broken.append(f"{target}: no file {file.relative_to(ROOT)}")
        elif anchor and file.suffix == ".md" and anchor not in anchors(file.read_text("utf-8")):
            broken.append(f"{target}: no heading with anchor #{anchor}")
    assert broken == []


def test_the_link_check_finds_a_broken_link() -> None:
    """The check reads the links the pages have: the README's links to docs/ are among them,
    and a heading's anchor is spelt as GitHub spells it."""
    targets = links("README.md")
    assert "docs/usage.md#suppressing-a-finding" in targets
    assert "docs/integration.md#in-an-editor-jaxfix-lsp" in targets
    assert "in-an-editor-jaxfix-lsp" in anchors(text("docs/integration.md"))
    assert "jaxfix-apply-path-and-jaxfix-apply---diff-path" in anchors(text("docs/usage.md"))
    assert "no-such-heading" not in anchors(text("docs/usage.md"))
