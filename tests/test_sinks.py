"""The host-sink model: a project's sink of each kind makes a silent program report the kind's
rule, a look-alike of the same name from another module stays silent, and `[tool.jaxfix.sinks]`
reaches the rules, the prefilter and the result cache."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from jaxfix.cli import main
from jaxfix.models.sinks import Origin, SinkKind, project_sink
from jaxfix.rules.registry import all_rules, sink_owner
from jaxfix.run.config import job_for, load, validate
from jaxfix.run.engine import check_text, fix_text
from jaxfix.run.options import Options
from tests.documents import section
from tests.test_config import codes, jaxfix, project

RULES = all_rules()

# Per kind: the project's callable, a program that hands it a traced value, and the rule.
PROGRAMS = {
    SinkKind.SERIALIZE: (
        "my_lib.io.save_blob",
        """\
        import jax
        from my_lib.io import save_blob

        @jax.jit
        def step(x):
            save_blob(x, "out.bin")
            return x
        """,
        "JF101",
    ),
    SinkKind.CHECKPOINTER: (
        "my_lib.Saver",
        """\
        import jax
        import my_lib

        saver = my_lib.Saver()

        @jax.jit
        def step(x):
            saver.save("ckpt", x)
            return x
        """,
        "JF101",
    ),
    SinkKind.CACHE: (
        "my_lib.memoize",
        """\
        import jax
        import my_lib

        @my_lib.memoize
        @jax.jit
        def f(x):
            return x + 1
        """,
        "JF102",
    ),
    SinkKind.LOG: (
        "my_lib.metrics.record",
        """\
        import jax
        from my_lib.metrics import record

        @jax.jit
        def step(x):
            record("loss", x)
            return x
        """,
        "JF103",
    ),
    SinkKind.LOGGER: (
        "my_lib.get_logger",
        """\
        import jax
        import my_lib

        log = my_lib.get_logger()

        @jax.jit
        def step(x):
            log.info(x)
            return x
        """,
        "JF103",
    ),
    SinkKind.CONVERT: (
        "my_lib.to_host",
        """\
        import jax
        from my_lib import to_host

        @jax.jit
        def step(x):
            return to_host(x) + 1
        """,
        "JF104",
    ),
    SinkKind.PARALLEL: (
        "my_lib.WorkerPool",
        """\
        import jax
        import my_lib

        @jax.jit
        def step(x):
            pool = my_lib.WorkerPool()
            return pool.submit(abs, x).result()
        """,
        "JF105",
    ),
}


def test_every_kind_has_a_program() -> None:
    assert set(PROGRAMS) == set(SinkKind)


def found(text: str, kind: SinkKind, name: str) -> tuple[list[str], list[str]]:
    """The codes reported in `text` without, then with, the project's sink `name` of `kind`."""
    source = textwrap.dedent(text)
    with_sink = Options(sinks=(project_sink(kind, name),))
    return (
        [d.code for d in check_text(source, RULES)],
        [d.code for d in check_text(source, RULES, options=with_sink)],
    )


@pytest.mark.parametrize("kind", list(PROGRAMS), ids=str)
def test_a_project_sink_makes_a_silent_program_report_its_rule(kind: SinkKind) -> None:
    name, text, code = PROGRAMS[kind]
    assert sink_owner(kind).code == code
    assert found(text, kind, name) == ([], [code])


@pytest.mark.parametrize("kind", list(PROGRAMS), ids=str)
def test_the_same_name_from_another_module_stays_silent(kind: SinkKind) -> None:
    name, text, _ = PROGRAMS[kind]
    lookalike = textwrap.dedent(text).replace("my_lib", "other_lib")
    assert found(lookalike, kind, name) == ([], [])


def test_a_conversion_inside_a_project_log_call_is_the_log_rule_s_alone() -> None:
    name, text, _ = PROGRAMS[SinkKind.LOG]
    converted = text.replace('record("loss", x)', 'record("loss", float(x))')
    assert found(converted, SinkKind.LOG, name) == (["JF104"], ["JF103"])


def test_a_built_in_row_is_not_replaced_by_the_project_s() -> None:
    """`pickle.dumps` serializes its first argument whatever the project says: its own row
    (with the keyword `obj`) is kept."""
    text = """\
        import pickle
        import jax

        @jax.jit
        def step(x):
            return len(pickle.dumps(obj=x))
        """
    assert found(text, SinkKind.SERIALIZE, "pickle.dumps") == (["JF101"], ["JF101"])


SINKS_CONFIG = """\
[tool.jaxfix.sinks]
serialize = ["my_lib.io.save_blob"]
cache = ["my_lib.memoize"]
log = ["my_lib.metrics.record"]
"""


def files() -> dict[str, str]:
    kinds = [SinkKind.SERIALIZE, SinkKind.CACHE, SinkKind.LOG]
    return {f"{kind}.py": textwrap.dedent(PROGRAMS[kind][1]) for kind in kinds}


def test_the_sinks_table_reaches_every_rule(tmp_path: Path) -> None:
    root = project(tmp_path, "[tool.jaxfix]\n", files())
    assert codes(jaxfix(root, "check", ".")) == []
    (root / "pyproject.toml").write_text(SINKS_CONFIG)
    assert codes(jaxfix(root, "check", ".")) == [
        ("cache.py", "JF102"),
        ("log.py", "JF103"),
        ("serialize.py", "JF101"),
    ]


def test_changing_the_sinks_table_invalidates_the_cache(tmp_path: Path) -> None:
    root = project(tmp_path, "[tool.jaxfix.sinks]\nlog = ['my_lib.other']\n", files())
    cache = ["--cache-dir", str(tmp_path / "cache")]
    assert codes(jaxfix(root, "check", *cache, ".")) == []
    (root / "pyproject.toml").write_text("[tool.jaxfix.sinks]\nlog = ['my_lib.metrics.record']\n")
    assert codes(jaxfix(root, "check", *cache, ".")) == [("log.py", "JF103")]


def test_rule_options_are_other_spellings_of_the_table(tmp_path: Path) -> None:
    table = tmp_path / "table.toml"
    table.write_text("[tool.jaxfix.sinks]\nserialize = ['a.save']\ncache = ['a.memo']\n")
    options = tmp_path / "options.toml"
    options.write_text(
        "[tool.jaxfix.rules.JF101]\nextra-serializers = ['a.save']\n"
        "[tool.jaxfix.rules.cache-on-traced]\nextra-cache-decorators = ['a.memo']\n"
    )
    sinks = [
        job_for(load(path), tmp_path / "x.py", fix=False).options.sinks for path in (table, options)
    ]
    assert (
        sinks[0]
        == sinks[1]
        == (
            project_sink(SinkKind.SERIALIZE, "a.save"),
            project_sink(SinkKind.CACHE, "a.memo"),
        )
    )
    assert all(row.origin is Origin.PROJECT for row in sinks[0])


def test_the_readme_configuration_example_is_valid(tmp_path: Path) -> None:
    example = section("Configuration").split("```toml\n", 1)[1].split("```", 1)[0]
    (tmp_path / "pyproject.toml").write_text(example, encoding="utf-8")
    config = load(tmp_path / "pyproject.toml")
    validate([config])
    kinds = {row.kind for row in config.sink_table()}
    assert kinds == set(SinkKind), "the example shows every kind"


def sinks_command(cwd: Path, *args: str) -> Result:
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(cwd)
        return CliRunner().invoke(main, ["sinks", *args])


def test_jaxfix_sinks_lists_the_built_in_rows_and_the_project_s(tmp_path: Path) -> None:
    project(tmp_path, SINKS_CONFIG, {})
    lines = sinks_command(tmp_path, "--kind", "log").stdout.splitlines()
    assert lines[0].split() == ["kind", "callable", "rule", "origin"]
    rows = [line.split() for line in lines[1:]]
    assert ["log", "logging.info", "JF103", "built-in"] in rows
    assert ["log", "mlflow.log_metric", "JF103", "built-in"] in rows
    assert rows[-1] == ["log", "my_lib.metrics.record", "JF103", "project"]
    assert {row[0] for row in rows} == {"log"}


def test_jaxfix_sinks_as_json_has_every_rule_s_rows(tmp_path: Path) -> None:
    project(tmp_path, SINKS_CONFIG, {})
    rows = json.loads(sinks_command(tmp_path, "--output-format", "json").stdout)
    assert {(row["kind"], row["rule"]) for row in rows} == {
        (str(kind), sink_owner(kind).code) for kind in SinkKind
    }
    saver = next(row for row in rows if row["callable"] == "my_lib.io.save_blob")
    assert saver == {
        "kind": "serialize",
        "callable": "my_lib.io.save_blob",
        "rule": "JF101",
        "rule_name": "serialize-in-traced",
        "origin": "project",
        "payload": {"position": 0, "keyword": None, "rest": False},
        "detail": None,
    }
    numpy_save = next(row for row in rows if row["callable"] == "numpy.save")
    assert numpy_save["payload"] == {"position": 1, "keyword": "arr", "rest": False}


def test_jaxfix_sinks_reports_a_bad_table_as_check_does(tmp_path: Path) -> None:
    project(tmp_path, "[tool.jaxfix.sinks]\nloger = ['a.b']\n", {})
    result = sinks_command(tmp_path)
    assert result.exit_code == 2
    assert result.stderr == (
        f"Error: {tmp_path / 'pyproject.toml'}: [tool.jaxfix.sinks] unknown kind `loger`"
        " (did you mean `logger`?)\n"
    )


def test_a_sink_no_callback_fixes_has_no_fix() -> None:
    """A SQLite connection works only in the thread that made it."""
    call = "DB.execute('?', (x,))"
    header = "import sqlite3\nDB = sqlite3.connect(':memory:')"
    text = f"{header}\nimport jax\n\n\n@jax.jit\ndef f(x):\n    {call}\n    return x\n"
    (found,) = check_text(text, RULES)
    assert found.code == "JF101"
    assert found.fix_title is None
    assert "after the call" in found.note


@pytest.mark.parametrize(
    ("header", "call"),
    [
        pytest.param("import json", "json.dumps(x)", id="json"),
        pytest.param("from json import dumps", "dumps(x)", id="json from-import"),
    ],
)
def test_json_is_given_python_values_however_it_is_imported(header: str, call: str) -> None:
    """A host copy (a NumPy array) is still no JSON value: its leaves are given `.tolist()`."""
    text = f"{header}\nimport jax\n\n\n@jax.jit\ndef f(x):\n    {call}\n    return x\n"
    fixed = fix_text(text, RULES, unsafe_fixes=True)
    assert "(jax.tree_util.tree_map(lambda a: a.tolist(), jax.device_get(x)))" in fixed.text
    assert fixed.diagnostics == []


@pytest.mark.parametrize(
    ("made", "writes"),
    [
        pytest.param("ckpt = ocp.StandardCheckpointer()", "ckpt.save('/tmp/c', x)", id="assigned"),
        pytest.param(
            "with ocp.StandardCheckpointer() as ckpt:", "ckpt.save('/tmp/c', x)", id="with"
        ),
        pytest.param("with sqlite3.connect('l.db') as db:", "db.execute('?', (x,))", id="with db"),
    ],
)
def test_an_object_a_checkpointer_row_makes_writes_with_its_methods(made: str, writes: str) -> None:
    body = f"    {made}\n    {'    ' if made.startswith('with') else ''}{writes}\n"
    text = (
        "import sqlite3\nimport jax\nimport orbax.checkpoint as ocp\n\n\n@jax.jit\ndef f(x):\n"
        + body
        + "    return x\n"
    )
    assert [d.code for d in check_text(text, RULES)] == ["JF101"]


SHELF = """\
import shelve

import jax


@jax.jit
def f(x):
{body}    return x
"""


@pytest.mark.parametrize(
    ("body", "codes"),
    [
        pytest.param(
            '    with shelve.open("s") as db:\n        db["x"] = x\n', ["JF101"], id="with block"
        ),
        pytest.param('    db = shelve.open("s")\n    db["x"] = x * 2\n', ["JF101"], id="assigned"),
        pytest.param(
            '    with shelve.open("s") as db:\n        db["n"] = x.shape[0]\n',
            [],
            id="a static value stored",
        ),
        pytest.param('    db = {}\n    db["x"] = x\n', [], id="a dict named like a shelf"),
    ],
)
def test_a_traced_value_stored_in_a_shelf_is_serialized(body: str, codes: list[str]) -> None:
    """A shelf pickles what is stored in it: `db[key] = value` (`__setitem__`)."""
    found = check_text(SHELF.format(body=body), RULES)
    assert [d.code for d in found] == codes
    assert all(d.message.startswith("`db[...] = ...` serializes") for d in found)
