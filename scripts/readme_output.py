"""Rewrite the output of every ```console block of README.md and docs/*.md that runs
`$ jaxfix ...` with what the command prints now (what tests/test_readme.py checks). Review the
diff before committing.

`jaxfix verify` runs fixture programs under the installed jax (the test extra's pinned one) and
names the interpreter, shown as `.venv/bin/python` wherever it is."""

from __future__ import annotations

import os
import re
import shlex
import sys
from pathlib import Path

from click.testing import CliRunner

from jaxfix.cli import main

ROOT = Path(__file__).parent.parent
BLOCK = re.compile(r"```console\n\$ (jaxfix [^\n]*)\n(.*?)```", re.S)
PYTHON_SHOWN = ".venv/bin/python"  # the interpreter `jaxfix verify` names, as the README shows it


def output(command: str) -> str:
    """What `command` prints (stdout, then stderr), with the interpreter's path as shown."""
    result = CliRunner().invoke(main, shlex.split(command)[1:])
    return (result.stdout + result.stderr).replace(sys.executable, PYTHON_SHOWN)


def pages() -> list[Path]:
    """README.md, then docs/*.md: the pages tests/test_readme.py reads."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def main_() -> None:
    os.chdir(ROOT)
    for page in pages():
        text = page.read_text(encoding="utf-8")
        new = BLOCK.sub(lambda m: f"```console\n$ {m[1]}\n{output(m[1])}```", text)
        if new != text:
            page.write_text(new, encoding="utf-8")
            print(f"rewrote {page.relative_to(ROOT)}")


if __name__ == "__main__":
    main_()
