"""The README shows real output: every `$ jaxfix ...` console block is re-run and compared."""

from __future__ import annotations

import os
import re
import shlex
import sys
import tomllib
from pathlib import Path

import pytest
from click.testing import CliRunner

from jaxfix.cli import main

ROOT = Path(__file__).parent.parent
README = (ROOT / "README.md").read_text()
BLOCKS = re.findall(r"```console\n\$ (jaxfix [^\n]*)\n(.*?)```", README, re.S)


def test_readme_has_console_examples() -> None:
    assert len(BLOCKS) >= 2


# `jaxfix verify` runs fixture programs under jax, and names the interpreter it runs them with.
PYTHON_SHOWN = ".venv/bin/python"
CASES = [
    pytest.param(
        command,
        expected,
        id=command,
        marks=[pytest.mark.jax] if command.startswith("jaxfix verify") else [],
    )
    for command, expected in BLOCKS
]


def test_readme_shows_a_verify_run() -> None:
    assert any(command.startswith("jaxfix verify") for command, _ in BLOCKS)


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
    setup = README.split("## Set up", 1)[1].split("\n## ", 1)[0]
    assert f"Python {required[2:]} or later" in setup
