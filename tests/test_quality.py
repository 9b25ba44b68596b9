"""The project's own checks, so that one test command runs them all."""

from __future__ import annotations

import subprocess
import sys
import tomllib
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
        ("lint-imports",),
    ],
    ids=lambda c: " ".join(c),
)
def test_tool_is_clean(command: tuple[str, ...]) -> None:
    result = run(str(BIN / command[0]), *command[1:])
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_floors_contract_names_every_module_above_them() -> None:
    """The forbidden contract keeps the models and the analysis below every other module of
    jaxfix: a new module must be named in it, or the contract would not see it."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    contracts = config["tool"]["importlinter"]["contracts"]
    (forbidden,) = [c for c in contracts if c["type"] == "forbidden"]
    below = {"analysis", "models"}
    above = {
        f"jaxfix.{path.stem}"
        for path in (ROOT / "jaxfix").iterdir()
        if (path.suffix == ".py" or (path / "__init__.py").exists())
        and path.stem not in below | {"__init__", "__main__"}
    }
    assert above - set(forbidden["forbidden_modules"]) == set()


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
