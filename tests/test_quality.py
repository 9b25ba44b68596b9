"""The project's own checks, so that one test command runs them all."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent
BIN = Path(sys.executable).parent


def run(*command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600)


@pytest.mark.parametrize(
    "command",
    [
        ("ruff", "check", "."),
        ("ruff", "format", "--check", "."),
        ("mypy",),
    ],
    ids=lambda c: " ".join(c),
)
def test_tool_is_clean(command: tuple[str, ...]) -> None:
    result = run(str(BIN / command[0]), *command[1:])
    assert result.returncode == 0, result.stdout + result.stderr


def test_jaxfix_checks_its_own_code() -> None:
    own = [str(p.relative_to(ROOT)) for p in sorted((ROOT / "tests").glob("*.py"))]
    result = run(sys.executable, "-m", "jaxfix", "check", "jaxfix", "codemods", *own)
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_static_tool_never_imports_jax() -> None:
    code = (
        "import sys, jaxfix.cli, jaxfix.engine, jaxfix.registry;"
        "jaxfix.registry.all_rules();"
        "print([m for m in sys.modules if m == 'jax' or m.startswith('jax.')])"
    )
    result = run(sys.executable, "-c", code)
    assert result.stdout.strip() == "[]", result.stderr
