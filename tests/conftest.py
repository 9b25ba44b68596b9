from __future__ import annotations

import pytest


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
