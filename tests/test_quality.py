"""The project's own checks, so that one test command runs them all."""

from __future__ import annotations

import ast
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
        ("lint-imports",),
    ],
    ids=lambda c: " ".join(c),
)
def test_tool_is_clean(command: tuple[str, ...]) -> None:
    result = run(str(BIN / command[0]), *command[1:])
    assert result.returncode == 0, result.stdout + result.stderr


# The one import up the floors, lazy (see `[tool.importlinter]` in pyproject.toml).
COMMAND_HOOK = ("jaxfix.rules.rule", "jaxfix.run.libcst_command")
# What the rule modules (`codemods/`, installed as `jaxfix.codemods`) may import: the floors
# below the run. The engine loads them by name (`jaxfix.rules.registry`), never by import.
RULE_FLOORS = ("jaxfix.models", "jaxfix.analysis", "jaxfix.fixes", "jaxfix.rules")


def imports_of_jaxfix() -> dict[str, set[str]]:
    """Every jaxfix module (the rule modules as `jaxfix.codemods.*`) and the jaxfix modules it
    imports anywhere: at the top, in a function, under `TYPE_CHECKING`."""
    files = {
        _module_name(p.relative_to(ROOT).with_suffix("")): p for p in ROOT.glob("jaxfix/**/*.py")
    }
    files |= {f"jaxfix.codemods.{p.stem}": p for p in ROOT.glob("codemods/*.py")}
    files = {name.removesuffix(".__init__"): path for name, path in files.items()}
    graph: dict[str, set[str]] = {}
    for name, path in files.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                found |= {alias.name for alias in node.names}
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*parts, base] if base else parts)
                found |= {base} | {f"{base}.{alias.name}" for alias in node.names}
        graph[name] = {module for module in found if module in files and module != name}
    return graph


def _module_name(relative: Path) -> str:
    return ".".join(relative.parts)


def test_no_jaxfix_module_imports_itself_back() -> None:
    """No cycle among jaxfix's modules, lazy imports included: each depends only on what it
    imports, and the import order never matters. (Tarjan's strongly connected components.)"""
    graph = imports_of_jaxfix()
    graph[COMMAND_HOOK[0]].discard(COMMAND_HOOK[1])
    cycles = _cycles(graph)
    assert cycles == [], cycles


def test_a_rule_module_imports_only_the_floors_below_the_run() -> None:
    graph = imports_of_jaxfix()
    above = {
        f"{rule} -> {module}"
        for rule, modules in graph.items()
        if rule.startswith("jaxfix.codemods.")
        for module in modules
        if not module.startswith(RULE_FLOORS) and module != "jaxfix"
    }
    assert above == set()


def test_the_cycle_check_sees_a_cycle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module, each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for imported in sorted(graph.get(module, ())):
            if imported not in index:
                visit(imported)
                low[module] = min(low[module], low[imported])
            elif imported in stack:
                low[module] = min(low[module], index[imported])
        if low[module] == index[module]:
            component = []
            while (top := stack.pop()) != module:
                component.append(top)
            if component:
                found.append(sorted([module, *component]))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return sorted(found)


def test_jaxfix_checks_its_own_code() -> None:
    own = [str(p.relative_to(ROOT)) for p in sorted((ROOT / "tests").glob("*.py"))]
    result = run(sys.executable, "-m", "jaxfix", "check", "jaxfix", "codemods", *own)
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_static_tool_never_imports_jax() -> None:
    code = (
        "import sys, jaxfix.cli, jaxfix.run.engine, jaxfix.rules.registry;"
        "jaxfix.rules.registry.all_rules();"
        "print([m for m in sys.modules if m == 'jax' or m.startswith('jax.')])"
    )
    result = run(sys.executable, "-c", code)
    assert result.stdout.strip() == "[]", result.stderr
