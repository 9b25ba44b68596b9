"""The `junit` format: JUnit XML, which CI services (GitLab, Jenkins, Azure) show as test
reports. One `testsuite` per checked file; each finding is a failing `testcase`, and a file
without findings one passing `testcase`, a file that could not be analysed an `error`."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Sequence

from jaxfix.models.diagnostic import Diagnostic
from jaxfix.report.formats.model import FileResult, cell_start
from jaxfix.report.formats.text import fix_line
from jaxfix.report.output import finding_line, position

NAME = "jaxfix"
PASSED = "no findings"
# Characters XML 1.0 cannot hold, even escaped (control characters, lone surrogates).
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def render_junit(results: Sequence[FileResult]) -> str:
    """The JUnit XML document, indented, with an XML declaration and a trailing newline."""
    root = ET.Element("testsuites", name=NAME)
    for result in results:
        root.append(_suite(result))
    _count(root)
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def _suite(result: FileResult) -> ET.Element:
    suite = ET.Element("testsuite", name=_xml(result.path))
    for diagnostic in result.diagnostics:
        suite.append(_failure_case(result, diagnostic))
    if result.error is not None:
        case = _case(result.path, "analysis", line=None)
        ET.SubElement(case, "error", message=_xml(result.error), type="error")
        suite.append(case)
    elif not result.diagnostics:
        suite.append(_case(result.path, PASSED, line=None))
    _count(suite)
    suite.set("skipped", "0")
    return suite


def _failure_case(result: FileResult, diagnostic: Diagnostic) -> ET.Element:
    """A notebook's finding is named at `cell N:line:col`, and its case's line is in the cell."""
    path = result.path
    _, line, _ = cell_start(result, diagnostic)
    where = position(diagnostic, result.cells)
    case = _case(path, f"{diagnostic.code} {diagnostic.name} at {where}", line)
    body = finding_line(path, diagnostic, result.cells, result.unsafe_fixes)
    if diagnostic.note:
        body += f"\n    note: {diagnostic.note}"
    if diagnostic.fix_safety is not None:
        body += "\n" + fix_line(diagnostic, color=False)
    failure = ET.SubElement(
        case,
        "failure",
        message=_xml(f"{diagnostic.code} {diagnostic.message}"),
        type=diagnostic.code,
    )
    failure.text = _xml(body)
    return case


def _case(path: str, name: str, line: int | None) -> ET.Element:
    case = ET.Element("testcase", name=_xml(name), classname=_xml(path), file=_xml(path))
    if line is not None:
        case.set("line", str(line))
    return case


def _count(element: ET.Element) -> None:
    """Set `tests`, `failures` and `errors` from the test cases under `element`."""
    found = list(element.iter("testcase"))
    element.set("tests", str(len(found)))
    element.set("failures", str(sum(case.find("failure") is not None for case in found)))
    element.set("errors", str(sum(case.find("error") is not None for case in found)))


def _xml(text: str) -> str:
    """`text` with what XML cannot hold replaced by U+FFFD."""
    return _NOT_XML.sub("\ufffd", text)
