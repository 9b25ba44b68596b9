from __future__ import annotations

import getpass
import os
import re
import sys
import tempfile
from typing import Any

import pytest


def _keep_bytecode() -> None:
    """Where the environment says not to write bytecode (`PYTHONDONTWRITEBYTECODE`), the
    tests' processes (xdist workers, and the jaxfix, language-server and pre-commit processes
    the tests start) keep it in a folder outside the source tree instead: else each of them
    compiles every module it imports from source, 0.1-0.3 s per process, a fifth of the
    suite's CPU time."""
    if not os.environ.pop("PYTHONDONTWRITEBYTECODE", None):
        return
    try:
        user = getpass.getuser()
    except (KeyError, OSError):  # a user id without a name (some containers)
        user = "unnamed"
    prefix = os.path.join(tempfile.gettempdir(), f"jaxfix-tests-pycache-{user}")
    os.environ.setdefault("PYTHONPYCACHEPREFIX", prefix)
    sys.pycache_prefix = os.environ["PYTHONPYCACHEPREFIX"]
    sys.dont_write_bytecode = False


_keep_bytecode()

# A fixture case's run under jax: its rule's cases share one interpreter (test_fixtures.py).
_PROOF = re.compile(r"tests/test_fixtures\.py::test_runs_under_jax\w*\[(\w+)/")
# The pre-commit tests share one hook virtualenv, built by the first of them under pre-commit's
# store lock: on two workers, the second would wait out the build instead of running other tests.
_PRE_COMMIT = "tests/test_precommit.py::"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--regen-fixtures",
        action="store_true",
        help="Write each fixture's after.py from jaxfix's current output (review the diff!).",
    )


@pytest.fixture(autouse=True)
def _cache_outside_the_tree(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every jaxfix run of a test (in-process or a subprocess) keeps its result cache in a
    fresh folder of its own, never in the folders whose contents the tests compare."""
    monkeypatch.setenv("JAXFIX_CACHE_DIR", str(tmp_path_factory.mktemp("cache") / "cache"))


@pytest.hookimpl(optionalhook=True)  # an xdist hook: pytest runs without xdist too
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """With `--dist load` (the suite's default is `worksteal`, set in `pyproject.toml`, which
    was faster on 2 cores in spite of what this saves): xdist's `load` scheduling, except that
    one worker gets all the selected cases of a rule in `test_runs_under_jax*` (both callback
    modes), so that their programs run in one interpreter, and all the pre-commit tests, so
    that one worker builds their hook virtualenv while the others go on.
    (`LoadScopeScheduling` hands out the largest groups first: the long ones start at once.)

    (`--dist loadgroup` would do it with `xdist_group` marks, but xdist 3.8 marks a group in
    `item._nodeid`, which pytest 9 no longer reads: the groups were split.)"""
    if config.getvalue("dist") != "load":
        return None  # the user chose a distribution: xdist's own
    from xdist.scheduler import LoadScopeScheduling

    class RuleScheduling(LoadScopeScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            if nodeid.startswith(_PRE_COMMIT):
                return _PRE_COMMIT
            match = _PROOF.match(nodeid)
            return match.group(1) if match else nodeid

    return RuleScheduling(config, log)
