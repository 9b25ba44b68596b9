from __future__ import annotations

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--regen-fixtures",
        action="store_true",
        help="Write each fixture's after.py from jaxfix's current output (review the diff!).",
    )
