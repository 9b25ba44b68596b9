"""The output formats, on findings of the real engine: exact human layouts, machine formats
validated against their schemas, edits that reproduce the fixed file, escaping."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from functools import cache
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import click
import jsonschema
import pytest

from jaxfix.models.diagnostic import Diagnostic, TextEdit
from jaxfix.models.edits import apply_edits
from jaxfix.report.docs import rule_url
from jaxfix.report.formats import FORMATS, STREAMING_FORMATS, FileResult, render, statistics
from jaxfix.report.output import finding_line, unified_diff
from jaxfix.rules.registry import all_rules, find_rule
from jaxfix.rules.rule import Rule
from jaxfix.run.engine import check_text, fix_text
from tests.programs import CACHED

ROOT = Path(__file__).parent.parent
SARIF_SCHEMA = Path(__file__).parent / "data" / "sarif-schema-2.1.0.json"
JSON_SCHEMA = ROOT / "jaxfix" / "schemas" / "json-output.schema.json"

# An unsafe fix, on a line where a non-ASCII letter and an emoji precede the finding.
HOISTED = """\
import pickle

import jax

BLOBS = []


@jax.jit
def step(x):
    y = x * 2
    BLOBS.append({"π😀": pickle.dumps(y)})
    return y
"""

# A safe fix, whose edits also remove the import.
# No fix, and a span over three lines.
MULTILINE = """\
import pickle

import jax


@jax.jit
def encode(x):
    return pickle.dumps(
        x
    )
"""

CLEAN = "import jax\n\nx = 1\n"

HOISTED_PATH = "src/my pkg/step model.py"


@cache
def checked(path: str, text: str) -> FileResult:
    """The file's findings from the engine, each fixable one with its edits."""
    return FileResult(path, text, tuple(check_text(text, all_rules(), filename=path, edits=True)))


def hoisted() -> FileResult:
    return checked(HOISTED_PATH, HOISTED)


def cached() -> FileResult:
    return checked("cached.py", CACHED)


def multiline() -> FileResult:
    return checked("multi.py", MULTILINE)


def clean() -> FileResult:
    return checked("clean.py", CLEAN)


def everything() -> list[FileResult]:
    return [hoisted(), cached(), multiline(), clean()]


def rule(code: str) -> type[Rule]:
    found = find_rule(code)
    assert found is not None
    return found


def fixed_alone(result: FileResult) -> str:
    """The file fixed by its only rule's fixes (unsafe ones too), through the engine."""
    (finding,) = result.diagnostics
    assert result.text is not None
    return fix_text(result.text, [rule(finding.code)], unsafe_fixes=True).text


def with_message(result: FileResult, message: str, path: str | None = None) -> FileResult:
    diagnostics = [dataclasses.replace(d, message=message) for d in result.diagnostics]
    return FileResult(path or result.path, result.text, diagnostics)


def only(result: FileResult) -> Diagnostic:
    (finding,) = result.diagnostics
    return finding


# The realistic findings are what the tests below assume.
def test_the_engine_finds_one_finding_per_file_with_its_edits() -> None:
    assert [(d.code, d.line, d.column) for d in hoisted().diagnostics] == [("JF101", 11, 24)]
    assert only(hoisted()).edits and only(cached()).edits
    assert only(multiline()).fix_safety is None and not only(multiline()).edits
    assert clean().diagnostics == ()


# text


def test_text_is_the_finding_line_then_the_fix_line() -> None:
    output = render("text", everything())
    assert output.splitlines() == [
        finding_line(HOISTED_PATH, only(hoisted())),
        f"    fix (unsafe): {rule('JF101').hoist_title}",
        finding_line("cached.py", only(cached())),
        f"    fix (safe): {rule('JF102').fix_title}",
        finding_line("multi.py", only(multiline())),
        f"    note: {only(multiline()).note}",
    ]
    assert output.startswith(f"{HOISTED_PATH}:11:25: JF101 `pickle.dumps` serializes")


def test_show_fixes_adds_the_diff_of_each_fix_alone() -> None:
    output = render("text", [hoisted(), multiline()], show_fixes=True)
    diff = unified_diff(HOISTED_PATH, HOISTED, fixed_alone(hoisted()), color=False)
    assert "+    jax.debug.callback(_host_pickle_dumps, y, ordered=True)\n" in diff
    assert output == (
        f"{finding_line(HOISTED_PATH, only(hoisted()))}\n"
        f"    fix (unsafe): {rule('JF101').hoist_title}\n"
        f"{diff}"
        f"{finding_line('multi.py', only(multiline()))}\n"
        f"    note: {only(multiline()).note}\n"
    )


@pytest.mark.parametrize("fmt", ["text", "full"])
def test_color_only_styles_the_human_formats(fmt: str) -> None:
    colored = render(fmt, everything(), color=True, show_fixes=True)
    assert "\x1b[" in colored
    assert click.unstyle(colored) == render(fmt, everything(), show_fixes=True)


# full


def test_full_shows_context_underline_help_and_diff() -> None:
    title = rule("JF102").fix_title
    diff = unified_diff("cached.py", CACHED, fixed_alone(cached()), color=False)
    # Lines 4 and 5 are blank: context stops at the first line with code.
    assert render("full", [cached()]) == (
        f"{finding_line('cached.py', only(cached()))}\n"
        "  |\n"
        "6 | @functools.lru_cache\n"
        "  | ^^^^^^^^^^^^^^^^^^^^ JF102\n"
        "7 | @jax.jit\n"
        "8 | def f(x):\n"
        "  |\n"
        f"  = help: {title} (safe fix)\n"
        f"{diff}\n"
    )


def test_full_underlines_in_terminal_cells_after_wide_characters() -> None:
    lines = render("full", [hoisted()]).splitlines()
    source = '11 |     BLOBS.append({"π😀": pickle.dumps(y)})'
    # 24 code points before the span, the emoji two cells wide: 25 cells.
    assert lines[lines.index(source) + 1] == "   | " + " " * 25 + "^" * 15 + " JF101"
    assert lines[1:3] == ["   |", " 9 | def step(x):"]


def test_full_underlines_each_line_of_a_multiline_span() -> None:
    assert render("full", [multiline()]).splitlines()[1:] == [
        "   |",
        " 6 | @jax.jit",
        " 7 | def encode(x):",
        " 8 |     return pickle.dumps(",
        "   |            ^^^^^^^^^^^^^",
        " 9 |         x",
        "   |         ^",
        "10 |     )",
        "   |     ^ JF107",
        "   |",
        f"   = note: {only(multiline()).note}",
        "",
    ]


def test_full_shows_tabs_as_spaces_and_underlines_under_them() -> None:
    text = MULTILINE.replace("    return", "\treturn")
    lines = render("full", [checked("tabs.py", text)]).splitlines()
    assert " 8 |     return pickle.dumps(" in lines
    assert "   |            ^^^^^^^^^^^^^" in lines


def test_full_without_source_is_the_finding_line_and_help() -> None:
    unread = FileResult("cached.py", None, cached().diagnostics)
    assert render("full", [unread]) == (
        f"{finding_line('cached.py', only(cached()))}\n"
        f"  = help: {rule('JF102').fix_title} (safe fix)\n\n"
    )


# json


def json_edits(fix: dict[str, Any]) -> list[TextEdit]:
    """The edits of a `json` fix, back in the engine's 0-based columns."""
    return [
        TextEdit(
            e["location"]["line"],
            e["location"]["column"] - 1,
            e["end_location"]["line"],
            e["end_location"]["column"] - 1,
            e["content"],
        )
        for e in fix["edits"]
    ]


def test_json_follows_its_schema_with_1_based_code_point_columns() -> None:
    output = render("json", everything())
    findings = json.loads(output)
    jsonschema.Draft202012Validator(json.loads(JSON_SCHEMA.read_text())).validate(findings)
    assert output == json.dumps(findings, indent=2) + "\n"
    first = findings[0]
    assert list(first) == [
        "code",
        "name",
        "message",
        "note",
        "path",
        "location",
        "end_location",
        "url",
        "fix",
        "cell",
        "related",
    ]
    assert (first["cell"], first["related"]) == (None, [])
    assert first["path"] == HOISTED_PATH
    assert (first["code"], first["name"]) == ("JF101", "serialize-in-traced")
    assert first["message"] == only(hoisted()).message
    assert (first["location"], first["end_location"]) == (
        {"line": 11, "column": 25},
        {"line": 11, "column": 40},
    )
    assert first["url"] == rule_url(rule("JF101"))
    assert (first["fix"]["title"], first["fix"]["safety"]) == (rule("JF101").hoist_title, "unsafe")
    assert findings[1]["fix"]["safety"] == "safe"
    assert [f["fix"] for f in findings[2:]] == [None]


@pytest.mark.parametrize("result", [hoisted, cached], ids=["unsafe", "safe"])
def test_json_edits_reproduce_the_fixed_file(result: Any) -> None:
    (finding,) = json.loads(render("json", [result()]))
    assert apply_edits(result().text, json_edits(finding["fix"])) == fixed_alone(result())


def test_json_without_findings_is_an_empty_array() -> None:
    assert render("json", []) == "[]\n"
    assert render("json", [clean()]) == "[]\n"


# sarif


def sarif_schema() -> dict[str, Any]:
    schema: dict[str, Any] = json.loads(SARIF_SCHEMA.read_text())
    return schema


def sarif(results: list[FileResult]) -> dict[str, Any]:
    """The `sarif` output, checked against the official SARIF 2.1.0 schema."""
    log: dict[str, Any] = json.loads(render("sarif", results))
    jsonschema.Draft4Validator(sarif_schema()).validate(log)
    return log


def test_sarif_is_valid_and_describes_every_rule() -> None:
    log = sarif(everything())
    assert (log["$schema"], log["version"]) == (sarif_schema()["id"], "2.1.0")
    (run,) = log["runs"]
    assert run["columnKind"] == "unicodeCodePoints"
    driver = run["tool"]["driver"]
    assert driver["name"] == "jaxfix"
    assert [r["id"] for r in driver["rules"]] == [r.code for r in all_rules()]
    for described, known in zip(driver["rules"], all_rules(), strict=True):
        assert described["name"] == known.name
        assert described["shortDescription"]["text"] == known.summary
        assert described["helpUri"] == rule_url(known)
    for result in run["results"]:
        assert driver["rules"][result["ruleIndex"]]["id"] == result["ruleId"]
    assert [r["ruleId"] for r in run["results"]] == ["JF101", "JF102", "JF107"]


def test_sarif_locations_are_relative_uris_and_code_point_regions() -> None:
    first = sarif(everything())["runs"][0]["results"][0]
    assert first["message"]["text"] == only(hoisted()).message
    location = first["locations"][0]["physicalLocation"]
    assert location["artifactLocation"]["uri"] == "src/my%20pkg/step%20model.py"
    assert unquote(location["artifactLocation"]["uri"]) == HOISTED_PATH
    assert location["region"] == {
        "startLine": 11,
        "startColumn": 25,
        "endLine": 11,
        "endColumn": 40,
    }


def test_sarif_uri_of_an_absolute_path_is_a_file_uri(tmp_path: Path) -> None:
    path = str(tmp_path / "a b.py")
    (result,) = sarif([with_message(cached(), "m", path=path)])["runs"][0]["results"]
    uri = result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
    assert uri == Path(path).as_uri() and "%20" in uri


@pytest.mark.parametrize("result", [hoisted, cached], ids=["unsafe", "safe"])
def test_sarif_fix_replacements_reproduce_the_fixed_file(result: Any) -> None:
    (found,) = sarif([result()])["runs"][0]["results"]
    (fix,) = found["fixes"]
    finding = only(result())
    assert finding.fix_safety is not None
    assert fix["description"]["text"] == f"{finding.fix_title} ({finding.fix_safety.value} fix)"
    (change,) = fix["artifactChanges"]
    assert (
        change["artifactLocation"] == found["locations"][0]["physicalLocation"]["artifactLocation"]
    )
    edits = [
        TextEdit(
            r["deletedRegion"]["startLine"],
            r["deletedRegion"]["startColumn"] - 1,
            r["deletedRegion"]["endLine"],
            r["deletedRegion"]["endColumn"] - 1,
            r["insertedContent"]["text"],
        )
        for r in change["replacements"]
    ]
    assert apply_edits(result().text, edits) == fixed_alone(result())


def test_sarif_finding_without_fix_has_no_fixes() -> None:
    (found,) = sarif([multiline()])["runs"][0]["results"]
    assert "fixes" not in found


def test_sarif_without_findings_is_a_valid_empty_run() -> None:
    for results in ([], [clean()]):
        (run,) = sarif(results)["runs"]
        assert run["results"] == []
        assert len(run["tool"]["driver"]["rules"]) == len(all_rules())


# github


def test_github_is_one_error_command_per_finding() -> None:
    lines = render("github", everything()).splitlines()
    finding = only(cached())
    # `:` in the message is data, not a separator: it stays.
    assert ":" in finding.message
    assert lines[1] == (
        "::error title=jaxfix (JF102),file=cached.py,line=6,col=1,endLine=6,endColumn=21::"
        f"JF102 {finding.message}"
    )
    assert lines[0].startswith(
        "::error title=jaxfix (JF101),file=src/my pkg/step model.py,"
        "line=11,col=25,endLine=11,endColumn=40::JF101 "
    )
    assert len(lines) == 3


def test_github_escapes_data_and_properties() -> None:
    odd = with_message(cached(), "100% sure: a, b\r\nnext", path="dir,1/a:b%.py")
    assert render("github", [odd]) == (
        "::error title=jaxfix (JF102),file=dir%2C1/a%3Ab%25.py,"
        "line=6,col=1,endLine=6,endColumn=21::JF102 100%25 sure: a, b%0D%0Anext\n"
    )


# junit


def junit(results: list[FileResult]) -> ET.Element:
    return ET.fromstring(render("junit", results))


def test_junit_has_a_suite_per_file_and_a_failing_case_per_finding() -> None:
    root = junit(everything())
    assert root.tag == "testsuites"
    assert (root.get("tests"), root.get("failures"), root.get("errors")) == ("4", "3", "0")
    suites = root.findall("testsuite")
    assert [s.get("name") for s in suites] == [HOISTED_PATH, "cached.py", "multi.py", "clean.py"]
    case = suites[0].find("testcase")
    assert case is not None
    failure = case.find("failure")
    assert failure is not None
    finding = only(hoisted())
    assert failure.get("message") == f"JF101 {finding.message}"
    assert failure.get("type") == "JF101"
    assert failure.text == (
        f"{finding_line(HOISTED_PATH, finding)}\n    fix (unsafe): {rule('JF101').hoist_title}"
    )
    assert case.get("classname") == case.get("file") == HOISTED_PATH
    assert case.get("line") == "11"


def test_junit_file_without_findings_is_a_passing_case() -> None:
    (suite,) = junit([clean()]).findall("testsuite")
    assert (suite.get("tests"), suite.get("failures")) == ("1", "0")
    (case,) = suite.findall("testcase")
    assert case.find("failure") is None


def test_junit_keeps_newlines_and_drops_what_xml_cannot_hold() -> None:
    odd = with_message(cached(), 'a <b> & "c"\nd\x1b[31m\x0c', path="a&b.py")
    root = junit([odd])
    failure = root.find("testsuite/testcase/failure")
    assert failure is not None
    assert failure.get("message") == 'JF102 a <b> & "c"\nd\ufffd[31m\ufffd'
    assert root.find("testsuite[@name='a&b.py']") is not None


def test_junit_without_files_is_an_empty_report() -> None:
    root = junit([])
    assert (root.tag, root.get("tests"), list(root)) == ("testsuites", "0", [])


# statistics


def test_statistics_counts_per_rule_most_frequent_first() -> None:
    results = [
        hoisted(),
        multiline(),
        cached(),
        checked("b.py", CACHED),
        checked("c.py", CACHED),
        clean(),
    ]
    # JF107 is not marked: its finding has no fix; JF101's is unsafe: made with unsafe fixes on.
    assert statistics(results) == (
        "3  JF102  cache-on-traced      [*]\n"
        "1  JF101  serialize-in-traced\n"
        "1  JF107  serialized-return\n"
    )
    unsafe = [dataclasses.replace(result, unsafe_fixes=True) for result in results]
    assert statistics(unsafe).splitlines()[1] == "1  JF101  serialize-in-traced  [*]"
    assert click.unstyle(statistics(results, color=True)) == statistics(results)


def test_statistics_breaks_ties_by_code_and_aligns_counts() -> None:
    results = [cached()] + [checked(f"{n}.py", MULTILINE) for n in range(10)]
    assert statistics(results).splitlines() == [
        "10  JF107  serialized-return",
        " 1  JF102  cache-on-traced    [*]",
    ]
    tie = statistics([cached(), hoisted()]).splitlines()
    assert [line.split()[1] for line in tie] == ["JF101", "JF102"]


def test_statistics_of_nothing_is_empty() -> None:
    assert statistics([clean()]) == ""


# render


def test_unknown_format_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown output format 'xml'"):
        render("xml", everything())


@pytest.mark.parametrize("fmt", STREAMING_FORMATS)
def test_streaming_formats_render_file_by_file(fmt: str) -> None:
    assert set(STREAMING_FORMATS) <= set(FORMATS)
    whole = render(fmt, everything(), show_fixes=True)
    assert whole == "".join(render(fmt, [r], show_fixes=True) for r in everything())


@pytest.mark.parametrize("fmt", STREAMING_FORMATS)
def test_streaming_formats_print_nothing_without_findings(fmt: str) -> None:
    assert render(fmt, []) == render(fmt, [clean()]) == ""


def test_human_formats_do_not_import_libcst() -> None:
    """A run answered from the cache never imports LibCST: nor must printing its findings."""
    code = (
        "import sys\n"
        "from jaxfix.models.diagnostic import Diagnostic, FixSafety\n"
        "from jaxfix.report.formats import FileResult, render, statistics\n"
        "d = Diagnostic('JF102', 'cache-on-traced', 'm', 1, 0, 1, 1, 'T', FixSafety.SAFE)\n"
        "results = [FileResult('a.py', 'x\\n', [d])]\n"
        "for fmt in ('text', 'full', 'github', 'junit'):\n"
        "    assert render(fmt, results, show_fixes=True)\n"
        "assert statistics(results)\n"
        "print('libcst' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert done.stdout == "False\n", done.stderr
