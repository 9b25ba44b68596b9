"""Imports a fix adds go where isort and Ruff's `I` rules put them."""

from __future__ import annotations

import itertools
import subprocess
import sys
from pathlib import Path

import libcst as cst
import pytest

from jaxfix.fixes.fix import ImportNeeded
from jaxfix.fixes.imports import add_imports

JAX = ImportNeeded("jax")


def added(source: str, *needed: ImportNeeded, first_party: tuple[str, ...] = ()) -> str:
    return add_imports(cst.parse_module(source), needed, first_party).code


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        pytest.param(
            "import os\n\nimport numpy as np\nfrom jax import jit\n\nX = 1\n",
            "import os\n\nimport jax\nimport numpy as np\nfrom jax import jit\n\nX = 1\n",
            id="sorted into its section, before the from-imports",
        ),
        pytest.param(
            "import os\n\nimport flax\n\nX = 1\n",
            "import os\n\nimport flax\nimport jax\n\nX = 1\n",
            id="last of its section",
        ),
        pytest.param(
            '"""Doc."""\n\nimport os\nimport pickle\n\n\ndef f():\n    pass\n',
            '"""Doc."""\n\nimport os\nimport pickle\n\nimport jax\n\n\ndef f():\n    pass\n',
            id="a section of its own after the standard library",
        ),
        pytest.param(
            "# Copyright.\nfrom . import util\n\nX = 1\n",
            "# Copyright.\nimport jax\n\nfrom . import util\n\nX = 1\n",
            id="a section before the others, under the file's header comment",
        ),
        pytest.param(
            "import os\n\nfrom . import util\n",
            "import os\n\nimport jax\n\nfrom . import util\n",
            id="between the standard library and relative imports",
        ),
        pytest.param(
            '"""Doc."""\n\n\ndef f():\n    pass\n',
            '"""Doc."""\n\nimport jax\n\n\ndef f():\n    pass\n',
            id="no import yet: after the docstring",
        ),
        pytest.param(
            "X = 1\n",
            "import jax\n\nX = 1\n",
            id="no import, no docstring",
        ),
        pytest.param(
            "from __future__ import annotations\n\nimport numpy\n",
            "from __future__ import annotations\n\nimport jax\nimport numpy\n",
            id="after __future__",
        ),
        pytest.param(
            "import jax.numpy as jnp\nimport jax\n",
            "import jax.numpy as jnp\nimport jax\n",
            id="already imported",
        ),
    ],
)
def test_placement(source: str, expected: str) -> None:
    assert added(source, JAX) == expected


def test_from_imports_and_first_party_sections() -> None:
    source = "import os\n\nimport jax\n\nfrom shop import prices\n"
    assert added(
        source, ImportNeeded("pickle"), ImportNeeded("shop.util", "fmt"), first_party=("shop",)
    ) == (
        "import os\nimport pickle\n\nimport jax\n\nfrom shop import prices\n"
        "from shop.util import fmt\n"
    )
    merged = "from lab.steps import forward\n\nX = 1\n"
    assert added(merged, ImportNeeded("lab.steps", "SNAPSHOTS")) == (
        "from lab.steps import SNAPSHOTS, forward\n\nX = 1\n"
    )
    assert added(merged, ImportNeeded("lab.steps", "run")) == (
        "from lab.steps import forward, run\n\nX = 1\n"
    )
    star = "from shop.util import *\n"
    assert added(star, ImportNeeded("shop.util", "fmt")) == star


HEADERS = [
    "import os\n",
    "import pickle\nimport sys\n",
    "import numpy as np\n",
    "from jax import jit\n",
    "import flax\nimport optax\n",
    "from . import local\n",
    "import zeta\n",
]


def test_isort_clean_files_stay_clean(tmp_path: Path) -> None:
    """Every combination of these import groups, sorted by Ruff, then given an import a fix
    adds: Ruff's import sorting finds nothing to change in any of them."""
    ruff = [sys.executable, "-m", "ruff", "check", "--isolated", "--select", "I", "--quiet"]
    sorted_folder, added_folder = tmp_path / "sorted", tmp_path / "added"
    sorted_folder.mkdir()
    added_folder.mkdir()
    for size in range(len(HEADERS) + 1):
        for number, chosen in enumerate(itertools.combinations(HEADERS, size)):
            text = "".join(chosen) + "\n\ndef f(x):\n    return x\n"
            (sorted_folder / f"m{size}_{number}.py").write_text(text)
    subprocess.run([*ruff, "--fix", str(sorted_folder)], check=False, capture_output=True)
    wanted = [JAX, ImportNeeded("pickle"), ImportNeeded("jax.numpy"), ImportNeeded("jax", "lax")]
    for path in sorted_folder.iterdir():
        for index, needed in enumerate(wanted):
            (added_folder / f"{path.stem}_{index}.py").write_text(added(path.read_text(), needed))
    found = subprocess.run(
        [*ruff, "--output-format", "concise", str(added_folder)], capture_output=True, text=True
    )
    assert found.returncode == 0, found.stdout
    assert len(list(added_folder.iterdir())) == 2 ** len(HEADERS) * len(wanted)
