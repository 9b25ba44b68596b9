"""Jupyter notebooks: their code cells checked as one Python text (a cell sees what earlier
cells define), positions named `path:cell N:line:col`, fixes written back into the cells with
outputs, execution counts and metadata kept."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from jaxfix.cli import main
from jaxfix.models.cells import CellMap
from jaxfix.run.discovery import iter_python_files
from jaxfix.run.notebook import MAGIC, NotebookError, parse_notebook
from jaxfix.run.sourcefile import SourceError, read_source

SETUP = "%matplotlib inline\nimport pickle\n\nimport jax\nimport jax.numpy as jnp"
STEP = """\
BLOBS = []


@jax.jit
def step(x):
    h = jnp.tanh(x)
    BLOBS.append(pickle.dumps(h))
    return h * 2"""
CALL = "out = step(jnp.array([0.0, 1.0]))\njax.effects_barrier()\nprint(out, len(BLOBS))"
OUTPUT = {"name": "stdout", "output_type": "stream", "text": ["[0. 2.] 0\n"]}


def code(source: str, count: int | None = None, **extra: Any) -> dict[str, Any]:
    return {
        "cell_type": "code",
        "execution_count": count,
        "metadata": extra.pop("metadata", {}),
        "outputs": extra.pop("outputs", []),
        "source": source.splitlines(keepends=True),
    }


def notebook(*cells: dict[str, Any]) -> dict[str, Any]:
    return {
        "cells": list(cells),
        "metadata": {"kernelspec": {"language": "python", "name": "python3"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }


EXPERIMENT = notebook(
    {"cell_type": "markdown", "metadata": {}, "source": ["# Experiment ü\n", "notes"]},
    code(SETUP, 1, metadata={"tags": ["setup"]}),
    code(STEP, 2),
    code(CALL, 3, outputs=[OUTPUT]),
)


def dumped(document: dict[str, Any]) -> str:
    """As Jupyter writes a notebook: indent 1, non-ASCII as it is, a last newline."""
    return json.dumps(document, indent=1, ensure_ascii=False) + "\n"


# The position map and the round trip


def test_code_cells_are_one_text_with_magics_masked() -> None:
    parsed = parse_notebook(dumped(EXPERIMENT))
    assert parsed.python.startswith(f"{MAGIC}%matplotlib inline\nimport pickle\n")
    assert parsed.python.endswith("print(out, len(BLOBS))\n")
    assert parsed.cell_map == CellMap((1, 6, 14), (1, 2, 3))


def test_a_line_of_the_text_is_a_line_of_its_cell() -> None:
    cells = parse_notebook(dumped(EXPERIMENT)).cell_map
    assert cells.locate(1) == (1, 1)
    assert cells.locate(5) == (1, 5)
    assert cells.locate(12) == (2, 7)
    assert cells.label(14, 9) == "cell 3:1:9"


def test_empty_cells_and_cell_magics_keep_their_places() -> None:
    text = dumped(notebook(code(""), code("%%time\nx = 1\n"), code("help?\ny = 2")))
    parsed = parse_notebook(text)
    assert parsed.python == f"{MAGIC}%%time\n{MAGIC}x = 1\n{MAGIC}help?\ny = 2\n"
    assert parsed.cell_map == CellMap((1, 3), (2, 3))
    assert parsed.render(parsed.python) == text


def test_unchanged_text_gives_back_the_same_bytes() -> None:
    text = json.dumps(EXPERIMENT, indent=2, sort_keys=True)  # no last newline, indent 2
    parsed = parse_notebook(text)
    assert parsed.render(parsed.python) == text
    changed = parsed.render(parsed.python.replace("h * 2", "h * 3"))
    assert changed.startswith('{\n  "cells"') and not changed.endswith("\n")


def test_a_changed_cell_keeps_outputs_counts_and_metadata() -> None:
    parsed = parse_notebook(dumped(EXPERIMENT))
    fixed = parsed.python.replace("print(out, len(BLOBS))", "print(out)")
    document = json.loads(parsed.render(fixed))
    assert document["cells"][3]["source"] == [
        "out = step(jnp.array([0.0, 1.0]))\n",
        "jax.effects_barrier()\n",
        "print(out)",
    ]
    assert document["cells"][3]["outputs"] == [OUTPUT]
    assert document["cells"][3]["execution_count"] == 3
    assert document["cells"][1]["metadata"] == {"tags": ["setup"]}
    assert document["cells"][1]["source"][0] == "%matplotlib inline\n"  # the magic restored
    assert document["cells"][0] == EXPERIMENT["cells"][0]
    assert document["metadata"] == EXPERIMENT["metadata"]


def test_lines_added_at_the_top_go_into_the_first_code_cell() -> None:
    parsed = parse_notebook(dumped(EXPERIMENT))
    sources = parsed.split("import os\n" + parsed.python + "print('end')\n")
    assert sources[0] == "import os\n" + SETUP
    assert sources[1] == STEP
    assert sources[2] == CALL + "\nprint('end')"


def test_lines_added_at_a_cell_boundary_go_after_the_earlier_cell() -> None:
    parsed = parse_notebook(dumped(EXPERIMENT))
    text = parsed.python.replace("    return h * 2\n", "    return h * 2\nSEEN = 0\n")
    assert parsed.split(text)[1:] == [STEP + "\nSEEN = 0", CALL]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"cells": [', "invalid notebook JSON: Expecting value: line 1 column 12 (char 11)"),
        ("[]", "not a notebook: no `cells` list"),
        ('{"cells": [{"cell_type": "code", "source": 3}]}', "the source of cell 1 is not text"),
    ],
)
def test_what_is_not_a_notebook_is_said_in_one_line(text: str, message: str) -> None:
    with pytest.raises(NotebookError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_notebook(text)


def test_a_bad_notebook_is_a_source_error_naming_the_file(tmp_path: Path) -> None:
    path = tmp_path / "bad.ipynb"
    path.write_text("{")
    with pytest.raises(SourceError, match=r"bad\.ipynb: invalid notebook JSON"):
        read_source(path)


def test_folders_are_walked_for_notebooks(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("")
    (tmp_path / "b.ipynb").write_text(dumped(EXPERIMENT))
    (tmp_path / "c.txt").write_text("")
    found = [p.name for p in iter_python_files([tmp_path]) if isinstance(p, Path)]
    assert found == ["a.py", "b.ipynb"]


# The command line


def write_experiment(tmp_path: Path) -> Path:
    path = tmp_path / "exp.ipynb"
    path.write_text(dumped(EXPERIMENT), encoding="utf-8")
    return path


def test_check_names_the_cell_of_a_finding(tmp_path: Path) -> None:
    write_experiment(tmp_path)
    (tmp_path / "bad.ipynb").write_text("{")
    result = CliRunner().invoke(main, ["check", "--no-cache", str(tmp_path)])
    assert result.exit_code == 2
    assert f"{tmp_path / 'exp.ipynb'}:cell 2:7:18: JF101 `pickle.dumps`" in result.stdout
    assert f"error: {tmp_path / 'bad.ipynb'}: invalid notebook JSON" in result.stderr
    assert "Checked 2 files: 1 finding" in result.stderr


def test_the_machine_outputs_place_a_finding_in_its_cell(tmp_path: Path) -> None:
    """As Ruff's json output does: a `cell` field, and lines counted in that cell (not in the
    cells' joined text); the same place in the sarif, github and junit outputs."""
    write_experiment(tmp_path)
    path = tmp_path / "exp.ipynb"

    def output(fmt: str) -> str:
        return CliRunner().invoke(main, ["check", "--output-format", fmt, str(path)]).stdout

    [found] = json.loads(output("json"))
    place = (found["cell"], found["location"], found["end_location"])
    assert place == (2, {"line": 7, "column": 18}, {"line": 7, "column": 33})
    [result] = json.loads(output("sarif"))["runs"][0]["results"]
    [location] = result["locations"]
    region = location["physicalLocation"]["region"]
    assert (location["properties"], region["startLine"], region["startColumn"]) == (
        {"cell": 2},
        7,
        18,
    )
    github = output("github")
    assert ",line=7,col=18,endLine=7,endColumn=33::cell 2: JF101 " in github
    junit = output("junit")
    assert 'name="JF101 serialize-in-traced at cell 2:7:18"' in junit
    assert 'line="7"' in junit


def test_a_later_cell_reaches_a_function_an_earlier_cell_defines(tmp_path: Path) -> None:
    helper = "import pickle\nimport jax\n\ndef save(v):\n    return pickle.dumps(v)"
    path = tmp_path / "h.ipynb"
    path.write_text(
        dumped(notebook(code(helper), code("@jax.jit\ndef f(x):\n    save(x)\n    return x")))
    )
    result = CliRunner().invoke(main, ["check", "--no-cache", str(path)])
    assert result.stdout.startswith(f"{path}:cell 1:5:12: JF107 `pickle.dumps`")


def test_apply_diff_shows_the_changed_cells(tmp_path: Path) -> None:
    path = write_experiment(tmp_path)
    result = CliRunner().invoke(
        main, ["apply", "--diff", "--unsafe-fixes", "--no-cache", str(path)]
    )
    assert result.exit_code == 1
    assert result.stdout.startswith(f"--- a/{path}:cell 2\n+++ b/{path}:cell 2\n@@ -4,5 +4,9 @@\n")
    assert "+    jax.debug.callback(_host_pickle_dumps, h, ordered=True)\n" in result.stdout
    assert path.read_text(encoding="utf-8") == dumped(EXPERIMENT)


def fixed_experiment(tmp_path: Path) -> Path:
    path = write_experiment(tmp_path)
    result = CliRunner().invoke(main, ["apply", "--unsafe-fixes", "--no-cache", str(path)])
    assert result.exit_code == 0, result.output
    return path


def test_apply_fixes_the_notebook_in_place(tmp_path: Path) -> None:
    path = fixed_experiment(tmp_path)
    document = json.loads(path.read_text(encoding="utf-8"))  # still a notebook's JSON
    assert "jax.debug.callback(_host_pickle_dumps, h, ordered=True)" in "".join(
        document["cells"][2]["source"]
    )
    for index in (0, 1, 3):
        assert document["cells"][index] == EXPERIMENT["cells"][index]
    assert document["cells"][2]["execution_count"] == 2
    assert path.read_text(encoding="utf-8").endswith("}\n")
    again = CliRunner().invoke(main, ["check", "--no-cache", str(path)])
    assert again.exit_code == 0, again.output


def test_apply_on_standard_input_answers_the_notebook(tmp_path: Path) -> None:
    args = ["apply", "--unsafe-fixes", "--no-cache", "-", "--stdin-filename", "exp.ipynb"]
    result = CliRunner().invoke(main, args, input=dumped(EXPERIMENT))
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert "jax.debug.callback" in "".join(document["cells"][2]["source"])
    assert document["cells"][3] == EXPERIMENT["cells"][3]


RUN_CELLS = """\
import json, sys
cells = json.load(open(sys.argv[1], encoding="utf-8"))["cells"]
namespace = {"__name__": "__main__"}
for cell in cells:
    if cell["cell_type"] == "code":
        source = "".join(cell["source"])
        lines = [l for l in source.splitlines() if not l.lstrip().startswith("%")]
        exec(compile("\\n".join(lines), "<cell>", "exec"), namespace)
"""


@pytest.mark.jax
def test_the_fixed_cells_run_under_jax(tmp_path: Path) -> None:
    """Run in order in one namespace, as Jupyter would, the fixed cells give the output the
    traced `pickle.dumps` never gave: the step's result, and one pickled host array."""
    path = fixed_experiment(tmp_path)
    script = textwrap.dedent(RUN_CELLS) + "print(len(namespace['BLOBS']))\n"
    result = subprocess.run(
        [sys.executable, "-c", script, str(path)],
        capture_output=True,
        text=True,
        timeout=300,
        env={"JAX_PLATFORMS": "cpu", "PATH": "/usr/bin:/bin"},
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == "[0.        1.5231884] 1\n1\n"
