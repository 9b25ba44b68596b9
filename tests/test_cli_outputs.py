"""`jaxfix check`'s outputs end to end through click, on a folder of real programs: every
`--output-format`, `--statistics`, `--show-fixes` and `--add-ignore[=REASON]`. What goes to
stdout and to stderr, the exit codes, the edits the engine computes (and the cache keeps), and
the files `--add-ignore` rewrites. The renderers themselves are tested in test_formats.py."""

from __future__ import annotations

import json
import os
import re
import shutil
import xml.etree.ElementTree as ET
from collections import Counter
from functools import cache
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import jsonschema
import pytest
from click.testing import CliRunner, Result

import jaxfix.run.runner
from jaxfix.cli import main
from jaxfix.models.diagnostic import TextEdit
from jaxfix.models.edits import apply_edits
from jaxfix.report.formats import FORMATS, FileResult, render
from jaxfix.report.output import unified_diff
from jaxfix.rules.registry import select_rules
from jaxfix.run.engine import check_text
from tests.programs import CACHED, CLEAN, HOISTABLE, RETURNED

ROOT = Path(__file__).parent.parent
JSON_SCHEMA = ROOT / "jaxfix" / "schemas" / "json-output.schema.json"
SARIF_SCHEMA = Path(__file__).parent / "data" / "sarif-schema-2.1.0.json"

# A safe fix (JF102), no finding, an unsafe fix (JF101), no fix (JF101); sorted by name, as the
# discovery walks a folder.
SAMPLES = {
    "cached.py": CACHED,
    "clean.py": CLEAN,
    "hoistable.py": HOISTABLE,
    "returned.py": RETURNED,
}
BROKEN = "import jax\nimport pickle\npickle.dumps(\n"
BROKEN_ERROR = "error: src/broken.py:3:13: syntax error: '(' was never closed"
FIXABLE = "3 findings, 1 fixable with `jaxfix apply` (1 more with `--unsafe-fixes`)"
SUMMARY = f"Checked 4 files: {FIXABLE}."
SUMMARY_WITH_ERROR = f"Checked 5 files: {FIXABLE}, 1 error."
FINDING = re.compile(r"(?P<path>[^\s:][^:]*):(?P<line>\d+):(?P<col>\d+): (?P<code>JF\d{3}) ")
GITHUB = re.compile(r"::error title=jaxfix \((JF\d{3})\),file=([^,]+),line=(\d+),col=(\d+),")
STATISTICS = re.compile(r"(\d+)  (JF\d{3})  [a-z-]+( +\[\*\])?")

Location = tuple[str, int, int, str]  # path, line, 1-based column, code


def invoke(*args: str, input: str | None = None) -> Result:
    return CliRunner().invoke(main, list(args), input=input, catch_exceptions=False)


def write_samples(folder: Path) -> Path:
    folder.mkdir(parents=True)
    for name, text in SAMPLES.items():
        (folder / name).write_text(text)
    return folder


@pytest.fixture
def src(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """`src/` (relative: the current directory is the test's folder) with the four samples."""
    monkeypatch.chdir(tmp_path)
    return write_samples(Path("src"))


@pytest.fixture
def broken(src: Path) -> Path:
    """`src/` with a file that does not parse besides the samples."""
    (src / "broken.py").write_text(BROKEN)
    return src


def engine_results(folder: Path) -> list[FileResult]:
    """What the engine finds in each sample of `folder`, in order, with the fixes' edits."""
    return [engine_result(str(folder / name), (folder / name).read_text()) for name in SAMPLES]


@cache
def engine_result(path: str, text: str) -> FileResult:
    found = check_text(text, select_rules(), filename=path, edits=True)
    return FileResult(path, text, tuple(found))


def located(stdout: str) -> list[Location]:
    """Where the text format's finding lines point, in order."""
    found = [FINDING.match(line) for line in stdout.splitlines() if not line.startswith(" ")]
    return [(m["path"], int(m["line"]), int(m["col"]), m["code"]) for m in found if m]


def text_locations(*paths: str) -> list[Location]:
    result = invoke("check", *paths)
    assert result.exit_code in (1, 2), result.stdout
    return located(result.stdout)


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(path): path.read_bytes() for path in sorted(folder.rglob("*")) if path.is_file()}


def applied_alone(path: Path, code: str, unsafe: bool, workdir: Path) -> str:
    """What `jaxfix apply --select CODE [--unsafe-fixes]` writes for a copy of `path`."""
    workdir.mkdir(exist_ok=True)
    copy = workdir / path.name
    shutil.copyfile(path, copy)
    result = invoke("apply", "--select", code, *(["--unsafe-fixes"] if unsafe else []), str(copy))
    assert result.exit_code in (0, 1), result.stderr
    return copy.read_text()


def json_edits(finding: dict[str, Any]) -> list[TextEdit]:
    """A JSON finding's edits, with the 0-based columns of `TextEdit`."""
    return [
        TextEdit(
            edit["location"]["line"],
            edit["location"]["column"] - 1,
            edit["end_location"]["line"],
            edit["end_location"]["column"] - 1,
            edit["content"],
        )
        for edit in (finding["fix"] or {"edits": []})["edits"]
    ]


def stderr_lines(result: Result) -> list[str]:
    return result.stderr.splitlines()


# every format: only its output on stdout, the summary and errors on stderr, the exit code


@pytest.mark.parametrize("fmt", FORMATS)
def test_stdout_is_only_the_formats_output_of_the_engines_findings(src: Path, fmt: str) -> None:
    result = invoke("check", "--output-format", fmt, str(src))
    assert result.stdout == render(fmt, engine_results(src))
    assert stderr_lines(result) == [SUMMARY]
    assert result.exit_code == 1


@pytest.mark.parametrize("fmt", [fmt for fmt in FORMATS if fmt != "junit"])
def test_a_syntax_error_goes_to_stderr_and_exits_2(broken: Path, fmt: str) -> None:
    result = invoke("check", "--output-format", fmt, str(broken))
    assert result.stdout == render(fmt, engine_results(broken))
    assert stderr_lines(result) == [BROKEN_ERROR, SUMMARY_WITH_ERROR]
    assert result.exit_code == 2


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_clean_file_exits_0(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fmt: str) -> None:
    monkeypatch.chdir(tmp_path)
    Path("clean.py").write_text(CLEAN)
    result = invoke("check", "--output-format", fmt, "clean.py")
    assert result.stdout == render(fmt, [FileResult("clean.py", CLEAN, ())])
    assert (result.exit_code, result.stderr) == (0, "Checked 1 file: 0 findings.\n")


# json


def test_json_validates_against_its_schema(broken: Path) -> None:
    findings = json.loads(invoke("check", "--output-format", "json", str(broken)).stdout)
    jsonschema.Draft202012Validator(json.loads(JSON_SCHEMA.read_text())).validate(findings)
    assert [
        (f["path"], f["location"]["line"], f["location"]["column"], f["code"]) for f in findings
    ] == text_locations(str(broken))


def test_json_edits_give_what_apply_writes_for_that_finding(src: Path, tmp_path: Path) -> None:
    findings = json.loads(invoke("check", "--output-format", "json", str(src)).stdout)
    safeties = [finding["fix"] and finding["fix"]["safety"] for finding in findings]
    assert safeties == ["safe", "unsafe", None]
    for finding in findings:
        path = Path(finding["path"])
        unsafe = finding["fix"] is not None and finding["fix"]["safety"] == "unsafe"
        fixed = applied_alone(path, finding["code"], unsafe, tmp_path / "alone")
        assert apply_edits(path.read_text(), json_edits(finding)) == fixed, finding["path"]
        assert (fixed != path.read_text()) == (finding["fix"] is not None)


@pytest.mark.parametrize(
    "args",
    [
        ["--output-format", "json"],
        ["--output-format", "sarif"],
        ["--output-format", "full"],
        ["--show-fixes"],
    ],
    ids=["json", "sarif", "full", "show-fixes"],
)
def test_a_warm_cache_keeps_the_edits(
    src: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: list[str]
) -> None:
    """A run that needs edits is not answered by entries stored without them; entries stored
    with them give the same output without analysing anything."""
    cache = ["--cache-dir", str(tmp_path / "cache")]
    reference = invoke("check", "--no-cache", *args, str(src)).stdout
    assert invoke("check", *cache, str(src)).exit_code == 1  # stores findings without edits
    assert invoke("check", *cache, *args, str(src)).stdout == reference

    def analyse(*_: object) -> None:
        raise AssertionError("a file was analysed again")

    monkeypatch.setattr(jaxfix.run.runner, "process", analyse)
    warm = invoke("check", *cache, *args, str(src))
    assert (warm.stdout, stderr_lines(warm)) == (reference, [SUMMARY])


# sarif


def test_sarif_validates_and_its_uris_are_relative_to_the_cwd(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    folder = write_samples(Path("my pkg"))
    log = json.loads(invoke("check", "--output-format", "sarif", str(folder)).stdout)
    jsonschema.Draft4Validator(json.loads(SARIF_SCHEMA.read_text())).validate(log)
    (run,) = log["runs"]
    found = []
    for result in run["results"]:
        location = result["locations"][0]["physicalLocation"]
        uri = location["artifactLocation"]["uri"]
        assert uri.startswith("my%20pkg/") and (tmp_path / unquote(uri)).is_file()
        region = location["region"]
        found.append((unquote(uri), region["startLine"], region["startColumn"], result["ruleId"]))
    assert found == text_locations(str(folder))


def test_sarif_fixes_are_the_json_edits(src: Path) -> None:
    (run,) = json.loads(invoke("check", "--output-format", "sarif", str(src)).stdout)["runs"]
    findings = json.loads(invoke("check", "--output-format", "json", str(src)).stdout)
    for result, finding in zip(run["results"], findings, strict=True):
        replacements = [
            (r["deletedRegion"], r["insertedContent"]["text"])
            for fix in result.get("fixes", [])
            for change in fix["artifactChanges"]
            for r in change["replacements"]
        ]
        edits = [
            (
                {
                    "startLine": e["location"]["line"],
                    "startColumn": e["location"]["column"],
                    "endLine": e["end_location"]["line"],
                    "endColumn": e["end_location"]["column"],
                },
                e["content"],
            )
            for e in (finding["fix"] or {"edits": []})["edits"]
        ]
        assert replacements == edits
        assert bool(edits) == (finding["fix"] is not None)


# github and junit


def test_github_is_one_error_line_per_finding_where_text_points(broken: Path) -> None:
    lines = invoke("check", "--output-format", "github", str(broken)).stdout.splitlines()
    assert all(line.startswith("::error ") for line in lines)
    matches = [GITHUB.match(line) for line in lines]
    found = [(m[2], int(m[3]), int(m[4]), m[1]) for m in matches if m]
    assert len(found) == len(lines)
    assert found == text_locations(str(broken))


def test_junit_has_one_failing_testcase_per_finding(broken: Path) -> None:
    root = ET.fromstring(invoke("check", "--output-format", "junit", str(broken)).stdout)
    assert [suite.get("name") for suite in root.iter("testsuite")] == [
        str(broken / name) for name in sorted([*SAMPLES, "broken.py"])
    ]
    failing = [
        (case.get("file"), int(case.get("line", "0")), failure.get("type"))
        for case in root.iter("testcase")
        if (failure := case.find("failure")) is not None
    ]
    assert failing == [(path, line, code) for path, line, _, code in text_locations(str(broken))]
    assert root.get("failures") == str(len(failing))


def test_junit_does_not_pass_a_file_that_failed_to_parse(broken: Path) -> None:
    root = ET.fromstring(invoke("check", "--output-format", "junit", str(broken)).stdout)
    cases = [
        case for case in root.iter("testcase") if case.get("file") == str(broken / "broken.py")
    ]
    assert all(len(case) > 0 for case in cases)  # a failure or an error element, if listed


# --statistics


def test_statistics_counts_per_code_and_prints_nothing_else(broken: Path) -> None:
    result = invoke("check", "--statistics", str(broken))
    rows = [STATISTICS.fullmatch(line) for line in result.stdout.splitlines()]
    assert all(rows), result.stdout
    counts = {row[2]: int(row[1]) for row in rows if row}
    assert counts == Counter(code for *_, code in text_locations(str(broken)))
    assert len(rows) == len(counts)
    assert stderr_lines(result) == [BROKEN_ERROR, SUMMARY_WITH_ERROR]
    assert result.exit_code == 2


@pytest.mark.parametrize(
    "args",
    [["--output-format", fmt] for fmt in FORMATS if fmt != "text"] + [["--show-fixes"]],
    ids=lambda args: args[-1],
)
def test_statistics_wins_over_the_output_format_and_show_fixes(src: Path, args: list[str]) -> None:
    alone = invoke("check", "--statistics", str(src))
    combined = invoke("check", "--statistics", *args, str(src))
    assert combined.stdout == alone.stdout != ""
    assert (combined.exit_code, stderr_lines(combined)) == (1, [SUMMARY])


# --show-fixes


def test_show_fixes_adds_the_diff_of_each_fix_alone(src: Path, tmp_path: Path) -> None:
    result = invoke("check", "--show-fixes", str(src))
    assert (result.exit_code, stderr_lines(result)) == (1, [SUMMARY])
    blocks = re.split(r"^(?=src/)", result.stdout, flags=re.MULTILINE)[1:]
    assert len(blocks) == len(text_locations(str(src)))
    for block in blocks:
        first, *rest = block.splitlines(keepends=True)
        match = FINDING.match(first)
        assert match is not None
        path = Path(match["path"])
        if rest and rest[0].startswith("    note: "):
            rest = rest[1:]
        if not rest:
            assert not first.rstrip("\n").endswith("[*]")
            continue
        fix, *diff = rest
        unsafe = fix.startswith("    fix (unsafe): ")
        assert first.rstrip("\n").endswith("[*]") is not unsafe  # only what `apply` makes
        fixed = applied_alone(path, match["code"], unsafe, tmp_path / "alone")
        assert "".join(diff) == unified_diff(str(path), path.read_text(), fixed, color=False)
        assert diff


# --add-ignore


@pytest.mark.parametrize(
    ("flag", "tail"),
    [("--add-ignore", ""), ("--add-ignore=adopted 2026-12", " -- adopted 2026-12")],
    ids=["bare", "reason"],
)
def test_add_ignore_suppresses_everything_once(src: Path, flag: str, tail: str) -> None:
    found = text_locations(str(src))
    before = snapshot(src)
    result = invoke("check", str(src), flag)
    assert (result.exit_code, result.stdout) == (0, "")
    assert stderr_lines(result) == ["Added 3 suppressions in 3 files (4 checked), 0 remaining."]
    for path, line, _, code in found:
        comment = f"  # jaxfix: ignore[{code}]{tail}"
        text = Path(path).read_text()
        assert text.splitlines()[line - 1].endswith(comment)
        assert text.replace(comment, "") == SAMPLES[Path(path).name]
    assert (src / "clean.py").read_bytes() == before[str(src / "clean.py")]
    checked = invoke("check", str(src))
    assert (checked.exit_code, checked.stdout) == (0, "")
    annotated = snapshot(src)
    again = invoke("check", str(src), flag)
    assert (again.exit_code, again.stdout) == (0, "")
    assert stderr_lines(again) == ["Added 0 suppressions in 0 files (4 checked), 0 remaining."]
    assert snapshot(src) == annotated


def test_add_ignore_keeps_mode_and_crlf(src: Path) -> None:
    cached, returned = src / "cached.py", src / "returned.py"
    cached.write_bytes(CACHED.replace("\n", "\r\n").encode())
    os.chmod(cached, 0o640)
    os.chmod(returned, 0o755)
    assert invoke("check", str(src), "--add-ignore").exit_code == 0
    lines = CACHED.splitlines()
    lines[5] += "  # jaxfix: ignore[JF102]"
    assert cached.read_bytes() == "".join(f"{line}\r\n" for line in lines).encode()
    assert "# jaxfix: ignore[JF107]" in returned.read_text()
    assert (os.stat(cached).st_mode & 0o777, os.stat(returned).st_mode & 0o777) == (0o640, 0o755)


def test_add_ignore_reports_a_syntax_error_and_annotates_the_rest(broken: Path) -> None:
    result = invoke("check", str(broken), "--add-ignore")
    assert result.exit_code == 2
    assert stderr_lines(result) == [
        BROKEN_ERROR,
        "Added 3 suppressions in 3 files (5 checked), 0 remaining, 1 error.",
    ]
    assert (broken / "broken.py").read_text() == BROKEN
    checked = invoke("check", *(str(broken / name) for name in SAMPLES))
    assert (checked.exit_code, checked.stdout) == (0, "")


def test_add_ignore_reports_a_finding_with_no_place_for_a_comment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    path = Path("step.py")
    text = "import pickle\n\nimport jax\n\n\n@jax.jit\ndef step(x):\n"
    text += "    y = 1 + \\\n        len(pickle.dumps(x)) + \\\n        2\n    return x\n"
    path.write_text(text)
    line = invoke("check", str(path)).stdout
    assert [code for *_, code in located(line)] == ["JF101"]
    result = invoke("check", str(path), "--add-ignore")
    assert result.stdout == line.replace("\n", " (no place for a comment)\n")
    assert stderr_lines(result) == ["Added 0 suppressions in 0 files (1 checked), 1 remaining."]
    assert (result.exit_code, path.read_text()) == (1, text)


@pytest.mark.parametrize("reason", ["two\nlines", "a\ttab", "   "], ids=["newline", "tab", "blank"])
def test_add_ignore_bad_reason_is_a_usage_error_and_touches_nothing(src: Path, reason: str) -> None:
    before = snapshot(src)
    result = invoke("check", str(src), f"--add-ignore={reason}")
    assert result.exit_code == 2
    assert "Invalid value for --add-ignore: a suppression reason must be one line" in (
        result.stderr
    )
    assert result.stdout == ""
    assert snapshot(src) == before


@pytest.mark.parametrize(
    "args",
    [["-", "--add-ignore"], ["--add-ignore=why", "-"], ["src/cached.py", "-", "--add-ignore"]],
    ids=["bare", "reason", "with-a-file"],
)
def test_add_ignore_refuses_stdin(src: Path, args: list[str]) -> None:
    before = snapshot(src)
    result = invoke("check", *args, input=CACHED)
    assert result.exit_code == 2
    assert "--add-ignore needs files to rewrite (not -)" in result.stderr
    assert result.stdout == ""
    assert snapshot(src) == before


def test_add_ignore_before_the_paths_takes_no_reason(src: Path) -> None:
    result = invoke("check", "--add-ignore", str(src / "cached.py"), str(src / "returned.py"))
    assert result.exit_code == 0
    for name in ("cached.py", "returned.py"):
        text = (src / name).read_text()
        assert "# jaxfix: ignore[" in text and " -- " not in text, name


def test_add_ignore_counts_an_unused_suppression_as_remaining(src: Path) -> None:
    for name in ("clean.py", "hoistable.py", "returned.py"):
        (src / name).unlink()
    (src / "stale.py").write_text("import jax\n\nx = 1  # jaxfix: ignore[JF102]\n")
    added = invoke("check", str(src), "--add-ignore")
    again = invoke("check", str(src))
    assert [code for *_, code in located(again.stdout)] == ["JF001"]
    assert stderr_lines(added) == ["Added 1 suppression in 1 file (2 checked), 1 remaining."]
    assert added.exit_code == 1
