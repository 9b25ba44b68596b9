"""Mutation run over the analysis: which one-line bugs the tests that exercise it would miss.

    .venv/bin/pip install -e ".[test,mutation]"
    .venv/bin/python scripts/mutation.py [--module jaxfix/analysis/interpreter.py ...]
        [--tests tests/test_analysis.py ...] [--jobs 2] [--show]

mutmut (https://mutmut.readthedocs.io) changes one thing at a time in each function of the
modules (an operator, a constant, a call's argument, a `break` for a `continue`...) and runs the
tests that cover that function; a mutant that no test fails *survived*. The run happens in a
copy of the work tree's tracked files (mutmut writes its `mutants/` folder beside the code), so
the work tree is left alone. A survivor is either a missing test (write one that fails on it) or
an *equivalent* mutant, which no test can kill because the program means the same: those are
listed in `scripts/mutation_equivalent.toml` with the reason. The report counts mutants, killed,
equivalent, survived (unexplained), untested and timed out, and names every unexplained survivor
(`--show` prints its change); the exit status is 1 when one is left.

The default scope is the statement interpreter and the fixed point over summaries (the flow of
values through a function's statements), with the analysis' own tests.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import tomllib
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MUTMUT = Path(sys.executable).with_name("mutmut")
EQUIVALENT = ROOT / "scripts" / "mutation_equivalent.toml"
MODULES = ["jaxfix/analysis/flow.py", "jaxfix/analysis/interpreter.py"]
TESTS = ["tests/test_analysis.py"]
# How `mutmut results` names each outcome, in the report's words.
OUTCOMES = {
    "killed": "killed",
    "survived": "survived",
    "no": "untested",  # "no tests": no test runs the function
    "timeout": "timed out",
    "suspicious": "suspicious",
    "skipped": "skipped",
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--module", action="append", help="a module to mutate (repeatable)")
    parser.add_argument("--tests", action="append", help="a test file to run (repeatable)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--show", action="store_true", help="print each survivor's change")
    args = parser.parse_args()
    if not MUTMUT.exists():
        sys.exit(f"error: {MUTMUT} not found: pip install -e '.[test,mutation]'")
    modules, tests = args.module or MODULES, args.tests or TESTS
    with tempfile.TemporaryDirectory(prefix="jaxfix-mutation-") as scratch:
        copy = _copy_of_work_tree(Path(scratch))
        _configure(copy, modules, tests)
        log = copy / "mutmut.log"
        with log.open("w") as out:
            run = subprocess.run(
                [str(MUTMUT), "run", "--max-children", str(args.jobs)],
                cwd=copy,
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        if run.returncode:
            print(log.read_text()[-3000:], file=sys.stderr)
            return run.returncode
        outcomes = _outcomes(copy)
        equivalent = _equivalent()
        survivors = sorted(name for name, outcome in outcomes.items() if outcome == "survived")
        unexplained = [name for name in survivors if name not in equivalent]
        _report(modules, tests, outcomes, len(survivors) - len(unexplained), unexplained)
        if args.show:
            for name in unexplained:
                shown = subprocess.run(
                    [str(MUTMUT), "show", name], cwd=copy, capture_output=True, text=True
                )
                print(f"\n{name}\n{_change(shown.stdout)}")
    return 1 if unexplained else 0


def _copy_of_work_tree(scratch: Path) -> Path:
    """The tracked files as they are in the work tree (uncommitted changes included)."""
    listed = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True
    ).stdout.split(b"\0")
    copy = scratch / "tree"
    for raw in filter(None, listed):
        path = Path(raw.decode())
        if (ROOT / path).is_file():
            (copy / path).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / path, copy / path)
    return copy


def _configure(copy: Path, modules: list[str], tests: list[str]) -> None:
    """mutmut's settings, in the copy's pyproject.toml."""
    settings = (
        "\n[tool.mutmut]\n"
        f"source_paths = {modules!r}\n"
        f"pytest_add_cli_args_test_selection = {tests!r}\n"
        "pytest_add_cli_args = ['-p', 'no:cacheprovider', '-q', '-x']\n"
        "also_copy = ['jaxfix', 'codemods', 'tests']\n"
    )
    with (copy / "pyproject.toml").open("a", encoding="utf-8") as pyproject:
        pyproject.write(settings.replace("'", '"'))


def _outcomes(copy: Path) -> dict[str, str]:
    """Each mutant's outcome, by its name (`module.function__mutmut_N`)."""
    listed = subprocess.run(
        [str(MUTMUT), "results", "--all", "true"],
        cwd=copy,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    found: dict[str, str] = {}
    for line in listed.splitlines():
        name, _, outcome = line.strip().partition(": ")
        if name and outcome:
            found[name] = outcome.split()[0]
    return found


def _equivalent() -> dict[str, str]:
    """The survivors no test can kill, with why (`scripts/mutation_equivalent.toml`)."""
    if not EQUIVALENT.exists():
        return {}
    return dict(tomllib.loads(EQUIVALENT.read_text(encoding="utf-8")).get("equivalent", {}))


def _report(
    modules: list[str],
    tests: list[str],
    outcomes: dict[str, str],
    equivalent: int,
    unexplained: list[str],
) -> None:
    counts = Counter(OUTCOMES.get(outcome, outcome) for outcome in outcomes.values())
    print(f"modules: {', '.join(modules)}; tests: {', '.join(tests)}")
    print(
        f"mutants {len(outcomes)}, killed {counts['killed']}, equivalent {equivalent}, "
        f"survived {len(unexplained)}, untested {counts['untested']}, "
        f"timed out {counts['timed out']}"
    )
    by_function = Counter(name.rsplit("__mutmut_", 1)[0] for name in unexplained)
    for function, count in by_function.most_common():
        print(f"  {count:4}  {function}")


def _change(shown: str) -> str:
    """The changed lines of `mutmut show`'s diff."""
    return "\n".join(line for line in shown.splitlines() if line[:2] in ("- ", "+ "))


if __name__ == "__main__":
    sys.exit(main())
