"""`[tool.jaxfix]` through the real command line: where it is found, what each key does, how the
command line overrides it, and how bad files are reported."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from jaxfix.codemods.cache_on_traced import CacheOnTraced

from jaxfix.cli import main
from jaxfix.rules import registry
from jaxfix.rules.rule_index import RuleInfo, info_of, rule_index
from tests.programs import CACHED, HOISTABLE

# JF101 once `my_lib.compiled` is declared a transform.
WRAPPED = """\
import pickle

import jax
import my_lib

BLOBS = []


@my_lib.compiled
def step(x):
    BLOBS.append(pickle.dumps(x))
    return x
"""

# JF101 once `my_lib.io.save_blob` is declared a serializer.
SAVER = """\
import jax
import my_lib


@jax.jit
def step(x):
    my_lib.io.save_blob(x, "out.bin")
    return x
"""

# JF102 once `my_lib.memoize` is declared a cache decorator.
MEMOIZED = """\
import jax
import my_lib


@my_lib.memoize
@jax.jit
def f(x):
    return x + 1
"""


def jaxfix(cwd: Path, *args: str) -> Result:
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(cwd)
        return CliRunner().invoke(main, list(args), catch_exceptions=False)


def codes(result: Result) -> list[tuple[str, str]]:
    """(file name, code) of every finding line."""
    found = []
    for line in result.stdout.splitlines():
        if line.startswith(" "):
            continue
        path, _, _, rest = line.split(":", 3)
        found.append((Path(path).name, rest.split()[0]))
    return found


def project(tmp_path: Path, config: str, files: dict[str, str]) -> Path:
    (tmp_path / "pyproject.toml").write_text(textwrap.dedent(config), encoding="utf-8")
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return tmp_path


def test_select_and_ignore_from_the_nearest_pyproject(tmp_path: Path) -> None:
    root = project(tmp_path, "[tool.jaxfix]\nselect = ['JF1']\nignore = ['JF101']\n", {})
    (root / "a.py").write_text(HOISTABLE + "\n\n" + CACHED.replace("def f", "def g"))
    assert codes(jaxfix(root, "check", ".")) == [("a.py", "JF102")]


def test_a_nested_table_wins_and_a_pyproject_without_one_is_skipped(tmp_path: Path) -> None:
    root = project(
        tmp_path,
        "[tool.jaxfix]\nignore = ['JF102']\n",
        {"a.py": CACHED, "sub/b.py": CACHED, "sub/deeper/c.py": CACHED, "other/d.py": CACHED},
    )
    (root / "sub" / "pyproject.toml").write_text("[tool.jaxfix]\nselect = ['JF102']\n")
    (root / "other" / "pyproject.toml").write_text("[project]\nname = 'other'\n")
    assert codes(jaxfix(root, "check", ".")) == [("b.py", "JF102"), ("c.py", "JF102")]


def test_config_forces_one_file_and_isolated_ignores_them(tmp_path: Path) -> None:
    root = project(tmp_path, "[tool.jaxfix]\nignore = ['JF102']\n", {"a.py": CACHED})
    forced = tmp_path / "elsewhere.toml"
    forced.write_text("[tool.jaxfix]\nselect = ['JF102']\n")
    assert codes(jaxfix(root, "check", ".")) == []
    assert codes(jaxfix(root, "check", "--config", str(forced), ".")) == [("a.py", "JF102")]
    assert codes(jaxfix(root, "check", "--isolated", ".")) == [("a.py", "JF102")]


def test_command_line_overrides_the_file(tmp_path: Path) -> None:
    root = project(
        tmp_path, "[tool.jaxfix]\nselect = ['JF102']\n", {"a.py": HOISTABLE, "b.py": CACHED}
    )
    assert codes(jaxfix(root, "check", ".")) == [("b.py", "JF102")]
    assert codes(jaxfix(root, "check", "--select", "JF101", ".")) == [("a.py", "JF101")]
    extended = jaxfix(root, "check", "--extend-select", "JF101", ".")
    assert codes(extended) == [("a.py", "JF101"), ("b.py", "JF102")]
    assert codes(jaxfix(root, "check", "--ignore", "cache-on-traced", ".")) == []


def test_per_file_ignores(tmp_path: Path) -> None:
    root = project(
        tmp_path,
        """\
        [tool.jaxfix.per-file-ignores]
        "tests/**" = ["JF101"]
        "legacy.py" = ["ALL"]
        """,
        {"tests/t.py": HOISTABLE, "src/legacy.py": CACHED, "src/a.py": HOISTABLE},
    )
    assert codes(jaxfix(root, "check", ".")) == [("a.py", "JF101")]


def test_exclude_skips_walked_files_and_force_exclude_named_ones(tmp_path: Path) -> None:
    root = project(
        tmp_path,
        "[tool.jaxfix]\nextend-exclude = ['generated/', 'old_*.py']\n",
        {"generated/g.py": CACHED, "old_x.py": CACHED, "build/b.py": CACHED, "a.py": CACHED},
    )
    assert codes(jaxfix(root, "check", ".")) == [("a.py", "JF102")]
    assert codes(jaxfix(root, "check", "old_x.py")) == [("old_x.py", "JF102")]
    assert codes(jaxfix(root, "check", "--force-exclude", "old_x.py")) == []
    assert codes(jaxfix(root, "check", "generated")) == [("g.py", "JF102")]  # named: walked
    replaced = jaxfix(root, "check", "--exclude", "a.py", ".")  # `extend-exclude` still applies
    assert codes(replaced) == [("b.py", "JF102")]


def test_respect_gitignore_can_be_turned_off(tmp_path: Path) -> None:
    root = project(tmp_path, "[tool.jaxfix]\nrespect-gitignore = false\n", {"ignored.py": CACHED})
    (root / ".git").mkdir()
    (root / ".gitignore").write_text("ignored.py\n")
    assert codes(jaxfix(root, "check", ".")) == [("ignored.py", "JF102")]
    assert codes(jaxfix(root, "check", "--respect-gitignore", ".")) == []


def test_unfixable_keeps_the_finding_without_a_fix(tmp_path: Path) -> None:
    root = project(tmp_path, "[tool.jaxfix]\nunfixable = ['JF102']\n", {"a.py": CACHED})
    result = jaxfix(root, "apply", ".")
    assert result.exit_code == 1
    assert (root / "a.py").read_text() == CACHED
    assert not result.stdout.rstrip().endswith("[*]")
    fixable = project(tmp_path, "[tool.jaxfix]\nfixable = ['JF101']\n", {})
    assert jaxfix(fixable, "apply", ".").exit_code == 1
    assert (root / "a.py").read_text() == CACHED


def test_unsafe_fixes_from_the_file_and_no_unsafe_fixes_from_the_command_line(
    tmp_path: Path,
) -> None:
    root = project(tmp_path, "[tool.jaxfix]\nunsafe-fixes = true\n", {"a.py": HOISTABLE})
    assert jaxfix(root, "apply", "--no-unsafe-fixes", ".").exit_code == 1
    assert (root / "a.py").read_text() == HOISTABLE
    assert jaxfix(root, "apply", ".").exit_code == 0
    assert "jax.debug.callback" in (root / "a.py").read_text()


def test_user_declared_transforms_are_traced_like_jit(tmp_path: Path) -> None:
    root = project(tmp_path, "[tool.jaxfix]\n", {"a.py": WRAPPED})
    assert codes(jaxfix(root, "check", ".")) == []
    (root / "pyproject.toml").write_text("[tool.jaxfix]\ntransforms = ['my_lib.compiled']\n")
    result = jaxfix(root, "check", ".")
    assert codes(result) == [("a.py", "JF101")]
    assert "decorated with `my_lib.compiled`" in result.stdout


def test_rule_options_add_serializers_and_cache_decorators(tmp_path: Path) -> None:
    root = project(tmp_path, "[tool.jaxfix]\n", {"a.py": SAVER, "b.py": MEMOIZED})
    assert codes(jaxfix(root, "check", ".")) == []
    (root / "pyproject.toml").write_text(
        textwrap.dedent("""\
        [tool.jaxfix.rules.serialize-in-traced]
        extra-serializers = ["my_lib.io.save_blob"]

        [tool.jaxfix.rules.JF102]
        extra-cache-decorators = ["my_lib.memoize"]
        """)
    )
    assert codes(jaxfix(root, "check", ".")) == [("a.py", "JF101"), ("b.py", "JF102")]


@pytest.mark.parametrize(
    "config, problem",
    [
        (
            "[tool.jaxfix]\nselct = ['JF1']\n",
            "[tool.jaxfix] unknown key `selct` (did you mean `select`?)",
        ),
        ("[tool.jaxfix]\nselect = 'JF101'\n", "`select`: expected a list of strings, got 'JF101'"),
        ("[tool.jaxfix]\nunsafe-fixes = 'yes'\n", "`unsafe-fixes`: expected true or false"),
        ("[tool.jaxfix]\nignore = ['JF999']\n", "[tool.jaxfix] `ignore`: unknown rule `JF999`"),
        (
            "[tool.jaxfix]\nselect = ['JF1O1']\n",
            "[tool.jaxfix] `select`: unknown rule `JF1O1` (did you mean `JF101`?)",
        ),
        ("[tool.jaxfix]\ntransforms = ['not a name']\n", "`transforms`: expected dotted names"),
        (
            "[tool.jaxfix.per-file-ignores]\n'x.py' = ['nope']\n",
            '[tool.jaxfix.per-file-ignores] `"x.py"`: unknown rule `nope`',
        ),
        (
            "[tool.jaxfix.per-file-ignores]\n'tests/**' = 'JF101'\n",
            '[tool.jaxfix.per-file-ignores] `"tests/**"`: expected a list of strings,'
            " got 'JF101'",
        ),
        ("[tool.jaxfix.rules.JF999]\nx = ['a.b']\n", "[tool.jaxfix.rules] unknown rule `JF999`"),
        (
            "[tool.jaxfix.rules.JF12]\nextra-cache-decorators = ['a.b']\n",
            "[tool.jaxfix.rules] unknown rule `JF12` (did you mean `JF102`?)",
        ),
        (
            "[tool.jaxfix.rules.cache-on-tracd]\nextra-cache-decorators = 1\n",
            "[tool.jaxfix.rules] unknown rule `cache-on-tracd` (did you mean `cache-on-traced`?)",
        ),
        (
            "[tool.jaxfix.rules.JF101]\nextra = ['a.b']\n",
            "[tool.jaxfix.rules.JF101] unknown option `extra`"
            " (options of JF101 serialize-in-traced: `extra-serializers`)",
        ),
        (
            "[tool.jaxfix.rules.JF102]\nfoo = 1\n",
            "[tool.jaxfix.rules.JF102] unknown option `foo`"
            " (options of JF102 cache-on-traced: `extra-cache-decorators`)",
        ),
        (
            "[tool.jaxfix.rules.serialize-in-traced]\nextra-serializer = ['a.b']\n",
            "[tool.jaxfix.rules.serialize-in-traced] unknown option `extra-serializer`"
            " (did you mean `extra-serializers`?)",
        ),
        (
            "[tool.jaxfix.rules.JF102]\nextra-cache-decorators = 1\n",
            "[tool.jaxfix.rules.JF102] `extra-cache-decorators`: expected a list of strings, got 1",
        ),
        (
            "[tool.jaxfix.rules]\nJF102 = ['a.b']\n",
            "[tool.jaxfix.rules] `JF102`: expected a table of options, got ['a.b']",
        ),
        (
            "[tool.jaxfix.sinks]\nserialise = ['a.b']\n",
            "[tool.jaxfix.sinks] unknown kind `serialise` (did you mean `serialize`?)",
        ),
        (
            "[tool.jaxfix.sinks]\nmetrics = ['a.b']\n",
            "[tool.jaxfix.sinks] unknown kind `metrics` (kinds: `serialize`, `checkpointer`,"
            " `cache`, `log`, `logger`, `convert`, `parallel`)",
        ),
        (
            "[tool.jaxfix.sinks]\nlog = 'my_lib.record'\n",
            "[tool.jaxfix.sinks] `log`: expected a list of strings, got 'my_lib.record'",
        ),
        (
            "[tool.jaxfix.sinks]\ncache = ['memoize']\n",
            "[tool.jaxfix.sinks] `cache`: expected dotted names like `my_lib.compiled`,"
            " got 'memoize'",
        ),
        (
            "[tool.jaxfix]\nsinks = ['a.b']\n",
            "[tool.jaxfix] `sinks`: expected a table of kind = [callables], got ['a.b']",
        ),
        ("[tool.jaxfix\n", "invalid TOML"),
    ],
)
def test_a_bad_file_is_one_error_naming_it_and_the_key(
    tmp_path: Path, config: str, problem: str
) -> None:
    root = project(tmp_path, config, {"a.py": CACHED})
    result = CliRunner().invoke(main, ["check", str(root)])
    assert result.exit_code == 2
    assert result.stdout == ""
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"Error: {root / 'pyproject.toml'}: ")
    assert problem in line
    if problem.startswith("["):
        assert line == f"Error: {root / 'pyproject.toml'}: {problem}"


@pytest.mark.parametrize(
    ("option", "selector", "message"),
    [
        (
            "--select",
            "JF1O1",
            "Invalid value for --select: unknown rule `JF1O1` (did you mean `JF101`?)",
        ),
        (
            "--ignore",
            "serialise-in-traced",
            "Invalid value for --ignore: unknown rule `serialise-in-traced`"
            " (did you mean `serialize-in-traced`?)",
        ),
        ("--extend-select", "JF999", "Invalid value for --extend-select: unknown rule `JF999`"),
    ],
)
def test_an_unknown_selector_on_the_command_line_names_the_option(
    tmp_path: Path, option: str, selector: str, message: str
) -> None:
    root = project(tmp_path, "", {"a.py": CACHED})
    result = CliRunner().invoke(main, ["check", option, selector, str(root)])
    assert result.exit_code == 2
    assert result.stderr.splitlines()[-1] == f"Error: {message}"


def test_a_typo_gets_a_suggestion(tmp_path: Path) -> None:
    root = project(tmp_path, "[tool.jaxfix]\nextend-selct = ['JF1']\n", {"a.py": CACHED})
    assert "(did you mean `extend-select`?)" in jaxfix(root, "check", ".").stderr


def test_changing_the_configuration_invalidates_the_cache(tmp_path: Path) -> None:
    root = project(tmp_path, "[tool.jaxfix]\nselect = ['JF101']\n", {"a.py": CACHED})
    cache = ["--cache-dir", str(tmp_path / "cache")]
    assert codes(jaxfix(root, "check", *cache, ".")) == []
    (root / "pyproject.toml").write_text("[tool.jaxfix]\nselect = ['JF102']\n")
    assert codes(jaxfix(root, "check", *cache, ".")) == [("a.py", "JF102")]


def test_a_warm_run_with_a_configuration_does_not_import_libcst(tmp_path: Path) -> None:
    root = project(tmp_path, "[tool.jaxfix]\nselect = ['JF102']\n", {"a.py": CACHED})
    script = (
        "import atexit, sys\n"
        "from jaxfix.cli import main\n"
        "atexit.register(lambda: print('libcst' in sys.modules, file=sys.stderr))\n"
        f"main(['check', '--cache-dir', {str(tmp_path / 'cache')!r}, {str(root)!r}])\n"
    )
    runs = [
        subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=root)
        for _ in range(2)
    ]
    assert [run.returncode for run in runs] == [1, 1]
    assert runs[0].stdout == runs[1].stdout
    assert [run.stderr.splitlines()[-1] for run in runs] == ["True", "False"]


class _OptIn(CacheOnTraced):
    """A stand-in for an opt-in rule."""

    code = "JF199"
    name = "opt-in-example"
    default_enabled = False


OPT_IN = info_of(_OptIn)


@pytest.mark.parametrize(
    ("select", "extend", "chosen"),
    [
        ((), (), False),
        (("ALL",), (), False),
        (("JF1",), (), False),
        (("JF199",), (), True),
        ((), ("opt-in-example",), True),
        (("JF101",), ("JF199",), True),
    ],
)
def test_an_opt_in_rule_runs_only_when_named(
    monkeypatch: pytest.MonkeyPatch, select: tuple[str, ...], extend: tuple[str, ...], chosen: bool
) -> None:
    defaults = rule_index()
    monkeypatch.setattr(registry, "rule_index", lambda: (*defaults, OPT_IN))
    rules = registry.select_rules(select, (), extend)
    assert (OPT_IN in rules) is chosen
    if not select:
        enabled = {rule for rule in defaults if rule.default_enabled}
        assert enabled <= set(rules), "extend-select adds to the default rules"


@pytest.mark.parametrize(
    ("select", "ignore", "extend", "left_off"),
    [
        (("ALL",), (), (), [("ALL", OPT_IN)]),
        (("JF1",), (), (), [("JF1", OPT_IN)]),
        ((), (), ("JF19",), [("JF19", OPT_IN)]),
        (("ALL",), (), ("JF199",), []),
        (("ALL",), (), ("opt-in-example",), []),
        (("ALL",), ("JF199",), (), []),
        (("JF10",), (), (), []),
        ((), (), (), []),
    ],
)
def test_a_prefix_or_all_that_leaves_an_opt_in_rule_off_is_told(
    monkeypatch: pytest.MonkeyPatch,
    select: tuple[str, ...],
    ignore: tuple[str, ...],
    extend: tuple[str, ...],
    left_off: list[tuple[str, RuleInfo]],
) -> None:
    defaults = tuple(rule for rule in rule_index() if rule.default_enabled)
    monkeypatch.setattr(registry, "rule_index", lambda: (*defaults, OPT_IN))
    assert registry.opt_in_left_off(select, ignore, extend) == left_off


NOTE = (
    "warning: `{}` leaves the opt-in rule JF108 (pickled-device-array) off: it runs only when"
    " named, e.g. `--extend-select JF108`"
)


@pytest.mark.parametrize(
    ("config", "args", "note"),
    [
        ("", ["--select", "ALL"], NOTE.format("ALL")),
        ("", ["--select", "JF1"], NOTE.format("JF1")),
        ("", ["--select", "ALL", "--extend-select", "pickled-device-array"], None),
        ("", ["--select", "JF101"], None),
        ("", [], None),
        ("[tool.jaxfix]\nselect = ['JF1']\n", [], NOTE.format("JF1")),
        ("[tool.jaxfix]\nselect = ['ALL']\nextend-select = ['JF108']\n", [], None),
        ("[tool.jaxfix]\nselect = ['JF108']\n", ["--select", "ALL"], NOTE.format("ALL")),
    ],
)
def test_selecting_by_prefix_or_all_says_once_that_the_opt_in_rule_stays_off(
    tmp_path: Path, config: str, args: list[str], note: str | None
) -> None:
    root = project(tmp_path, config, {"a.py": CACHED})
    cache = ["--cache-dir", str(tmp_path / "cache")]
    for _ in range(2):  # the second run is answered from the cache: the note is still there
        result = jaxfix(root, "check", *cache, *args, ".")
        assert result.exit_code != 2
        warnings = [line for line in result.stderr.splitlines() if line.startswith("warning:")]
        assert warnings == ([note] if note else [])


def test_extend_select_without_select_keeps_the_default_rules(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.jaxfix]\nextend-select = ["JF102"]\n')
    (tmp_path / "m.py").write_text(HOISTABLE)
    result = jaxfix(tmp_path, "check", ".")
    assert "JF101" in result.output
