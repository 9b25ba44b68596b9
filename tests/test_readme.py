"""The README shows real output: every `$ jaxfix ...` console block is re-run and compared."""

from __future__ import annotations

import os
import re
import shlex
from pathlib import Path

import pytest
from click.testing import CliRunner

from jaxfix.cli import main

ROOT = Path(__file__).parent.parent
BLOCKS = re.findall(
    r"```console\n\$ (jaxfix [^\n]*)\n(.*?)```", (ROOT / "README.md").read_text(), re.S
)


def test_readme_has_console_examples() -> None:
    assert len(BLOCKS) >= 2


@pytest.mark.parametrize("command, expected", BLOCKS, ids=[b[0] for b in BLOCKS])
def test_console_block_is_real_output(command: str, expected: str) -> None:
    previous = os.getcwd()
    os.chdir(ROOT)
    try:
        result = CliRunner().invoke(main, shlex.split(command)[1:])
    finally:
        os.chdir(previous)
    assert result.stdout + result.stderr == expected
