"""The command line, end to end through click: output format, exit codes, writes, errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from unittest.mock import ANY

import pytest
from click.testing import CliRunner, Result

from jaxfix.cli import main
from jaxfix.entry import exit_status
from tests.programs import CACHED, CLEAN, HOISTABLE, RETURNED


def invoke(*args: str, input: str | None = None) -> Result:
    return CliRunner().invoke(main, list(args), input=input, catch_exceptions=False)


def findings(stdout: str) -> list[str]:
    """The finding lines of text output (not the indented fix lines under them)."""
    return [line for line in stdout.splitlines() if not line.startswith(" ")]


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_check_prints_one_line_per_finding_and_exits_1(tmp_path: Path) -> None:
    path = write(tmp_path, "a.py", RETURNED)
    result = invoke("check", str(path))
    assert result.exit_code == 1
    assert result.stdout == (
        f"{path}:8:12: JF107 `pickle.dumps` serializes a traced value that `encode` returns "
        "(decorated with `jax.jit`)\n"
        "    note: return the array and serialize `jax.device_get(...)` of "
        "the result after the call; not rewritten: `encode` is public: other modules may call "
        "it (make it private, or run jaxfix over every module that imports it)\n"
    )
    assert result.stderr == "Checked 1 file: 1 finding.\n"


def test_check_marks_fixable_findings_and_counts_them(tmp_path: Path) -> None:
    write(tmp_path, "a.py", HOISTABLE)
    write(tmp_path, "b.py", CACHED)
    result = invoke("check", str(tmp_path))
    assert result.exit_code == 1
    lines = findings(result.stdout)
    assert [line.split(": ")[1].split()[0] for line in lines] == ["JF101", "JF102"]
    # `[*]`: a fix `apply` makes; the unsafe one only with `--unsafe-fixes`
    assert [line.endswith("[*]") for line in lines] == [False, True]
    assert result.stdout.splitlines()[1::2] == [
        "    fix (unsafe): Move the serialization to a host callback (`jax.debug.callback`)",
        "    fix (safe): Remove the cache decorator (`jax.jit` already caches compiled code)",
    ]
    assert result.stderr == (
        "Checked 2 files: 2 findings, 1 fixable with `jaxfix apply` "
        "(1 more with `--unsafe-fixes`).\n"
    )


@pytest.mark.parametrize("where", ["command line", "configuration"])
def test_unsafe_fixes_turned_on_mark_and_count_the_unsafe_fixes(tmp_path: Path, where: str) -> None:
    """`unsafe-fixes = true` in pyproject.toml makes `apply` apply them: `check` marks and
    counts them as the command line's `--unsafe-fixes` does."""
    write(tmp_path, "a.py", HOISTABLE)
    write(tmp_path, "b.py", CACHED)
    flag = ["--unsafe-fixes"] if where == "command line" else []
    if where == "configuration":
        write(tmp_path, "pyproject.toml", "[tool.jaxfix]\nunsafe-fixes = true\n")
    result = invoke("check", "--no-cache", *flag, str(tmp_path))
    assert all(line.endswith("[*]") for line in findings(result.stdout))
    command = "jaxfix apply --unsafe-fixes" if flag else "jaxfix apply"
    assert result.stderr == f"Checked 2 files: 2 findings, 2 fixable with `{command}`.\n"
    statistics = invoke("check", "--no-cache", "--statistics", *flag, str(tmp_path))
    assert statistics.stdout.splitlines()[0].endswith("[*]")


def test_statistics_mark_a_rule_only_when_apply_makes_its_fixes(tmp_path: Path) -> None:
    write(tmp_path, "a.py", HOISTABLE)
    write(tmp_path, "b.py", CACHED)
    result = invoke("check", "--no-cache", "--statistics", str(tmp_path))
    assert result.stdout == "1  JF101  serialize-in-traced\n1  JF102  cache-on-traced      [*]\n"


def test_apply_diff_lists_what_remains_where_it_is_now(tmp_path: Path) -> None:
    """`apply --diff` names each remaining finding as `check` prints it (on stderr: stdout
    stays a patch), at its line in the file as it is, not as it would be fixed."""
    text = CACHED + "\n\n" + RETURNED
    path = write(tmp_path, "a.py", text)
    checked = invoke("check", "--no-cache", str(path))
    [remaining] = [line for line in findings(checked.stdout) if "JF107" in line]
    remaining += "\n" + checked.stdout.split(remaining + "\n")[1].splitlines()[0]  # its note
    result = invoke("apply", "--no-cache", "--diff", str(path))
    assert result.exit_code == 1
    assert result.stdout.startswith(f"--- a/{path}\n")
    assert "JF107" not in result.stdout
    assert result.stderr == (
        f"{remaining}\nChecked 1 file: would fix 1 finding in 1 file, 1 remaining.\n"
    )


def test_a_missing_path_is_an_error_not_a_checked_file(tmp_path: Path) -> None:
    write(tmp_path, "clean.py", CLEAN)
    result = invoke("check", "--no-cache", str(tmp_path / "clean.py"), str(tmp_path / "gone.py"))
    assert result.exit_code == 2
    assert result.stderr.endswith("Checked 1 file: 0 findings, 1 error.\n")


def test_check_clean_exits_0(tmp_path: Path) -> None:
    write(tmp_path, "clean.py", CLEAN)
    result = invoke("check", str(tmp_path))
    assert (result.exit_code, result.stdout) == (0, "")
    assert result.stderr == "Checked 1 file: 0 findings.\n"


def test_parse_error_is_one_line_and_other_files_are_still_checked(tmp_path: Path) -> None:
    bad = write(tmp_path, "bad.py", "import jax\nimport pickle\npickle.dumps(\n")
    write(tmp_path, "good.py", RETURNED)
    result = invoke("check", str(tmp_path))
    assert result.exit_code == 2
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1
    assert errors[0].startswith(f"error: {bad}:3:")
    assert errors[0].endswith("syntax error: '(' was never closed")
    assert "JF107" in result.stdout


def test_missing_path_is_an_error_and_the_rest_still_runs(tmp_path: Path) -> None:
    good = write(tmp_path, "good.py", RETURNED)
    result = invoke("check", str(tmp_path / "missing.py"), str(good))
    assert result.exit_code == 2
    assert f"error: {tmp_path / 'missing.py'}: no such file or directory" in result.stderr
    assert "JF107" in result.stdout


def test_select_and_ignore(tmp_path: Path) -> None:
    write(tmp_path, "a.py", HOISTABLE)
    write(tmp_path, "b.py", CACHED)
    only_cache = invoke("check", "--select", "JF102", str(tmp_path))
    assert [line.split()[1] for line in findings(only_cache.stdout)] == ["JF102"]
    by_name = invoke("check", "--ignore", "cache-on-traced", str(tmp_path))
    assert [line.split()[1] for line in findings(by_name.stdout)] == ["JF101"]
    by_prefix = invoke("check", "--ignore", "JF1", str(tmp_path))
    assert (by_prefix.exit_code, by_prefix.stdout) == (0, "")


def test_unknown_selector_is_a_usage_error(tmp_path: Path) -> None:
    write(tmp_path, "a.py", HOISTABLE)
    result = CliRunner().invoke(main, ["check", "--select", "JF999", str(tmp_path)])
    assert result.exit_code == 2
    assert "Error: Invalid value for --select: unknown rule `JF999`\n" in result.stderr


def test_apply_diff_writes_nothing_and_exits_1(tmp_path: Path) -> None:
    path = write(tmp_path, "b.py", CACHED)
    result = invoke("apply", "--diff", str(path))
    assert result.exit_code == 1
    assert path.read_text() == CACHED
    assert f"--- a/{path}" in result.stdout
    assert "-@functools.lru_cache\n" in result.stdout
    assert "-import functools\n" in result.stdout
    assert "would fix 1 finding in 1 file" in result.stderr


def test_apply_diff_exits_0_when_nothing_would_change(tmp_path: Path) -> None:
    path = write(tmp_path, "a.py", RETURNED)
    result = invoke("apply", "--diff", str(path))
    assert (result.exit_code, result.stdout) == (0, "")


def test_apply_rewrites_safe_fixes_only_by_default(tmp_path: Path) -> None:
    cached = write(tmp_path, "b.py", CACHED)
    hoistable = write(tmp_path, "a.py", HOISTABLE)
    result = invoke("apply", str(tmp_path))
    assert cached.read_text() == CACHED.replace("import functools\n\n", "").replace(
        "@functools.lru_cache\n", ""
    )
    assert hoistable.read_text() == HOISTABLE
    assert result.exit_code == 1  # the unsafe JF101 fix was not applied: a finding remains
    assert "fixed 1 finding in 1 file, 1 remaining (1 fixable with `--unsafe-fixes`)" in (
        result.stderr
    )


def test_apply_unsafe_fixes_hoists_and_exits_0(tmp_path: Path) -> None:
    path = write(tmp_path, "a.py", HOISTABLE)
    result = invoke("apply", "--unsafe-fixes", str(path))
    assert result.exit_code == 0
    assert "jax.debug.callback(_host_pickle_dumps, y, ordered=True)" in path.read_text()
    assert "fixed 1 finding in 1 file, 0 remaining" in result.stderr


def test_apply_keeps_crlf_mode_and_encoding(tmp_path: Path) -> None:
    path = tmp_path / "b.py"
    source = "# -*- coding: latin-1 -*-\n# caf\xe9\n" + CACHED
    path.write_bytes(source.replace("\n", "\r\n").encode("latin-1"))
    os.chmod(path, 0o640)
    assert invoke("apply", str(path)).exit_code == 0
    data = path.read_bytes()
    assert b"\r\n" in data and b"\n" not in data.replace(b"\r\n", b"")
    assert "caf\xe9".encode("latin-1") in data
    assert b"lru_cache" not in data
    assert os.stat(path).st_mode & 0o777 == 0o640


def test_stdin_check_and_apply() -> None:
    checked = invoke("check", "--stdin-filename", "model.py", "-", input=CACHED)
    assert checked.stdout.startswith("model.py:6:1: JF102 ")
    applied = invoke("apply", "-", input=CACHED)
    assert applied.stdout == textwrap.dedent("""\
        import jax


        @jax.jit
        def f(x):
            return x + 1
        """)


@pytest.mark.parametrize("text", [CACHED, CLEAN], ids=["fixable", "clean"])
def test_apply_stdin_under_a_filename_answers_on_stdout_and_writes_no_file(
    tmp_path: Path, text: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An editor pipes the buffer of model.py: the file on disk is not jaxfix's to rewrite.
    path = write(tmp_path, "model.py", text)
    monkeypatch.chdir(tmp_path)
    applied = invoke("apply", "--no-cache", "--stdin-filename", "model.py", "-", input=text)
    expected = invoke("apply", "--no-cache", "-", input=text).stdout
    assert applied.stdout == expected
    assert "lru_cache" not in expected if text == CACHED else expected == CLEAN
    assert path.read_text() == text


def test_directories_skip_hidden_and_virtualenv_folders(tmp_path: Path) -> None:
    write(tmp_path, ".hidden/a.py", RETURNED)
    write(tmp_path, "venv/pyvenv.cfg", "")
    write(tmp_path, "venv/lib/a.py", RETURNED)
    write(tmp_path, "ignored/a.py", RETURNED)
    write(tmp_path, ".gitignore", "ignored/\n")
    write(tmp_path, "src/a.py", RETURNED)
    result = invoke("check", str(tmp_path))
    assert [line.split(":")[0] for line in findings(result.stdout)] == [
        str(tmp_path / "src" / "a.py")
    ]


def test_explain_and_rules() -> None:
    explained = invoke("explain", "JF101")
    assert explained.stdout.startswith("# JF101 serialize-in-traced\n")
    assert "## Fix safety" in explained.stdout
    listed = invoke("rules")
    header, *rows = listed.stdout.splitlines()
    assert header.split() == ["code", "name", "fix", "default", "summary"]
    assert [row.split()[:4] for row in rows] == [
        ["JF001", "unused-suppression", "none", "on"],
        ["JF101", "serialize-in-traced", "unsafe", "on"],
        ["JF102", "cache-on-traced", "safe", "on"],
        ["JF103", "leak-in-traced", "unsafe", "on"],
        ["JF104", "host-conversion-in-traced", "unsafe", "on"],
        ["JF105", "parallel-in-traced", "unsafe", "on"],
        ["JF106", "hash-in-traced", "unsafe", "on"],
        ["JF107", "serialized-return", "unsafe", "on"],
        ["JF108", "pickled-device-array", "safe", "opt-in"],
    ]
    assert rows[2].endswith("A memoizing cache decorator on a function that jax traces or jits")
    as_json = json.loads(invoke("rules", "--output-format", "json").stdout)
    assert [(r["code"], r["fix_safety"], r["default"]) for r in as_json] == [
        ("JF001", "none", "on"),
        ("JF101", "unsafe", "on"),
        ("JF102", "safe", "on"),
        ("JF103", "unsafe", "on"),
        ("JF104", "unsafe", "on"),
        ("JF105", "unsafe", "on"),
        ("JF106", "unsafe", "on"),
        ("JF107", "unsafe", "on"),
        ("JF108", "safe", "opt-in"),
    ]
    assert as_json[1]["options"] == {"extra-serializers": ANY}
    assert as_json[2]["url"].endswith("docs/rules.md#jf102-cache-on-traced")


@pytest.mark.parametrize("command", ["check", "apply"])
def test_select_help_says_what_the_default_is(command: str) -> None:
    text = " ".join(invoke(command, "--help").stdout.split())
    assert (
        "--select TEXT Rule codes, prefixes, names or ALL to run (default: every rule but the"
        " opt-in ones, which run only when named by code or name)."
    ) in text


def test_apply_requires_a_path() -> None:
    result = CliRunner().invoke(main, ["apply"])
    assert result.exit_code == 2
    assert "Missing argument 'PATHS...'" in result.stderr


def test_check_without_a_path_exits_2_on_an_error_in_the_current_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """(In a small folder of its own: run in the checkout, this took five seconds.)"""
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "cached.py").write_text(CACHED)
    (tmp_path / "broken.py").write_text("  x = 1\n")
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["check"])
    assert result.exit_code == 2, result.output
    assert result.stdout.startswith(f"{Path('pkg', 'cached.py')}:6:1: JF102 "), result.stdout
    assert "broken.py:1:" in result.stderr and "Checked 2 files" in result.stderr


def test_bundled_example_project_findings() -> None:
    example = Path(__file__).parent.parent / "examples" / "project"
    result = invoke("check", str(example))
    found = [(Path(line.split(":")[0]).name, line.split()[1]) for line in findings(result.stdout)]
    assert found == [
        ("model.py", "JF102"),
        ("train.py", "JF101"),
        ("train.py", "JF101"),
        ("train.py", "JF107"),
    ]


def test_suppressed_findings_are_not_reported_or_fixed(tmp_path: Path) -> None:
    source = HOISTABLE.replace(
        "BLOBS.append(pickle.dumps(y))", "BLOBS.append(pickle.dumps(y))  # jaxfix: ignore[JF101]"
    )
    path = tmp_path / "step.py"
    path.write_text(source + "z = 1  # jaxfix: ignore[JF102] -- stale\n", encoding="utf-8")
    checked = invoke("check", str(path))
    assert checked.exit_code == 1
    assert checked.stdout == f"{path}:13:8: JF001 unused suppression: no `JF102` finding here\n"
    assert invoke("check", "--ignore", "JF001", str(path)).exit_code == 0
    assert invoke("apply", "--unsafe-fixes", "--ignore", "JF001", str(path)).exit_code == 0
    assert path.read_text(encoding="utf-8").startswith(source)


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (["check"], 1),
        (["check", "--exit-zero"], 0),
        (["apply", "--diff", "--unsafe-fixes"], 1),
        (["apply", "--diff", "--unsafe-fixes", "--exit-zero"], 0),
        (["apply"], 1),  # the unsafe fix is not applied: the finding remains
        (["apply", "--exit-zero"], 0),
        (["apply", "--unsafe-fixes"], 0),  # fixed, nothing remains
        (["apply", "--unsafe-fixes", "--exit-non-zero-on-fix"], 1),
        (["apply", "--unsafe-fixes", "--exit-zero", "--exit-non-zero-on-fix"], 1),
    ],
)
def test_exit_code_flags(tmp_path: Path, args: list[str], code: int) -> None:
    path = write(tmp_path, "step.py", HOISTABLE)
    assert invoke(*args, str(path)).exit_code == code


def test_exit_zero_still_reports_an_error_with_2(tmp_path: Path) -> None:
    path = write(tmp_path, "bad.py", "import jax, pickle\nx = pickle.dumps(\n")
    assert invoke("check", "--exit-zero", str(path)).exit_code == 2


def test_check_without_a_path_checks_the_current_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path, "a.py", CACHED)
    write(tmp_path, "sub/b.py", CACHED)
    monkeypatch.chdir(tmp_path)
    bare = invoke("check", "--no-cache")
    dot = invoke("check", "--no-cache", ".")
    assert (bare.stdout, bare.stderr) == (dot.stdout, dot.stderr)
    assert [line.split(":")[0] for line in findings(bare.stdout)] == ["a.py", "sub/b.py"]
    assert bare.exit_code == 1
    # `apply` rewrites files: it still wants to be told which.
    refused = CliRunner().invoke(main, ["apply"])
    assert refused.exit_code == 2 and "Missing argument 'PATHS...'" in refused.stderr


def test_apply_shows_the_fix_line_under_each_remaining_finding(tmp_path: Path) -> None:
    # HOISTABLE's fix is unsafe: `apply` leaves it, and prints it as `check` does.
    path = write(tmp_path, "a.py", HOISTABLE)
    checked = invoke("check", "--no-cache", str(path))
    applied = invoke("apply", "--no-cache", str(path))
    assert "\n    fix (unsafe): Move the serialization to a host callback" in applied.stdout
    assert applied.stdout == checked.stdout
    assert path.read_text() == HOISTABLE and applied.exit_code == 1


def test_the_top_level_help_shows_each_command_whole() -> None:
    result = CliRunner().invoke(main, ["--help"], terminal_width=80)
    listed = result.stdout.split("Commands:\n", 1)[1].splitlines()
    assert len(listed) == len(main.commands)  # type: ignore[attr-defined]
    for line in listed:
        name, summary = line.split(maxsplit=1)
        assert summary == main.commands[name].get_short_help_str(limit=80)  # type: ignore[attr-defined]
        assert summary.endswith(".") and not summary.endswith("...")
        assert summary.count("(") == summary.count(")"), line


@pytest.mark.parametrize(
    ("code", "status", "printed"),
    [(None, 0, ""), (0, 0, ""), (2, 2, ""), ("usage: broken", 1, "usage: broken\n")],
)
def test_the_command_exits_with_the_status_systemexit_means(
    code: object, status: int, printed: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert exit_status(code) == status
    assert capsys.readouterr().err == printed


def test_the_command_flushes_its_output_before_its_hard_exit(tmp_path: Path) -> None:
    """`python -m jaxfix` leaves with `os._exit`: what it wrote must still arrive whole."""
    (tmp_path / "a.py").write_text(CACHED)
    for i in range(200):  # more output than one buffer holds
        (tmp_path / f"b{i}.py").write_text(CACHED)
    done = subprocess.run(
        [sys.executable, "-m", "jaxfix", "check", "--no-cache", "."],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 1
    assert done.stdout.count(" JF102 ") == 201
    assert done.stderr.strip().endswith(
        "Checked 201 files: 201 findings, 201 fixable with `jaxfix apply`."
    )


@pytest.mark.parametrize("command", [[], ["check"], ["apply"], ["explain"], ["clean"]])
def test_dash_h_is_help(command: list[str]) -> None:
    """`-h` works as `--help` does, as in Ruff."""
    assert invoke(*command, "-h").stdout == invoke(*command, "--help").stdout
    assert invoke(*command, "-h").exit_code == 0


@pytest.mark.parametrize(
    ("args", "hint"),
    [
        (["--fix"], "`jaxfix apply PATH...`"),
        (["--fix", "--unsafe-fixes"], "`jaxfix apply --unsafe-fixes PATH...`"),
    ],
)
def test_check_fix_names_apply(tmp_path: Path, args: list[str], hint: str) -> None:
    """Ruff's `check --fix` is `jaxfix apply`: the error says so, and nothing is written."""
    path = write(tmp_path, "a.py", CACHED)
    result = invoke("check", *args, str(path))
    assert result.exit_code == 2
    assert hint in result.stderr
    assert path.read_text() == CACHED


def test_quiet_prints_the_findings_without_the_summary(tmp_path: Path) -> None:
    path = write(tmp_path, "a.py", CACHED)
    loud, quiet = invoke("check", str(path)), invoke("check", "--quiet", str(path))
    assert quiet.stdout == loud.stdout != ""
    assert (quiet.stderr, quiet.exit_code) == ("", 1)
    assert invoke("check", "-q", str(path)).stderr == ""


def test_output_file_takes_what_stdout_would(tmp_path: Path) -> None:
    path = write(tmp_path, "a.py", CACHED)
    out = tmp_path / "findings.json"
    result = invoke("check", "--output-format", "json", "--output-file", str(out), str(path))
    assert result.stdout == ""
    assert result.exit_code == 1
    assert result.stderr.startswith("Checked 1 file")
    expected = invoke("check", "--output-format", "json", str(path)).stdout
    assert out.read_text() == expected != ""


def test_concise_prints_the_finding_lines_alone(tmp_path: Path) -> None:
    path = write(tmp_path, "a.py", CACHED)
    text = invoke("check", str(path)).stdout
    concise = invoke("check", "--output-format", "concise", str(path))
    assert concise.stdout == "".join(f"{line}\n" for line in findings(text))
    assert concise.stdout.count("\n") == 1


# A memo dict's lookup (line 10) and its store (line 13) in a helper a jitted function calls.
MEMO = Path(__file__).parent / "fixtures/hash_in_traced/module_memo_dict_dropped/before.py"


def test_a_memo_dict_is_one_finding_with_its_other_lines_as_related_places(
    tmp_path: Path,
) -> None:
    path = write(tmp_path, "memo.py", MEMO.read_text())
    cache = str(tmp_path / "cache")
    for _ in range(2):  # the second run is answered from the cache
        text = invoke("check", "--cache-dir", cache, str(path))
        [line] = findings(text.stdout)
        assert line.startswith(f"{path}:10:8: JF106 `x in _CACHE` hashes the traced `x`")
        assert text.stdout.splitlines()[1] == "    also at 11:16, 13:5"
    [found] = json.loads(invoke("check", "--output-format", "json", str(path)).stdout)
    assert found["related"] == [
        {"cell": None, "location": {"line": 11, "column": 16}},
        {"cell": None, "location": {"line": 13, "column": 5}},
    ]
    sarif = json.loads(invoke("check", "--output-format", "sarif", str(path)).stdout)
    [result] = sarif["runs"][0]["results"]
    regions = [r["physicalLocation"]["region"] for r in result["relatedLocations"]]
    assert [(r["startLine"], r["startColumn"]) for r in regions] == [(11, 16), (13, 5)]
