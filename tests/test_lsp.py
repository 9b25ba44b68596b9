"""`jaxfix lsp` end to end: a real LSP client (pytest-lsp) drives the server over stdio.

One server per module serves most tests (each on documents of its own); a second one runs
with UTF-8 positions, a severity from `initializationOptions` and a rule that crashes; a
third is shut down. The quick fixes are judged by the fixtures: applied one after another to
`before.py`, they give `after.py` byte for byte.
"""

from __future__ import annotations

import asyncio
import re
import shutil
import threading
from collections.abc import AsyncIterator
from pathlib import Path

import attrs
import pytest
import pytest_lsp
from click.testing import CliRunner
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.uris import to_fs_path
from pytest_lsp import client_capabilities

from jaxfix.cli import main as cli_main
from jaxfix.lsp.actions import wanted
from jaxfix.lsp.analysis import PerVersion, Snapshot
from jaxfix.lsp.convert import narrow
from jaxfix.lsp.positions import UTF8, UTF16, UTF32, LineIndex
from jaxfix.lsp.settings import Settings, read_settings
from jaxfix.models.diagnostic import FixSafety, TextEdit
from jaxfix.proofs.cases import Callbacks, Case, load_cases, run_programs
from jaxfix.report.docs import rule_doc, rule_url
from jaxfix.rules.registry import all_rules, find_rule, select_rules
from jaxfix.run.engine import fix_text
from tests.lsp_client import (
    Client,
    apply,
    change_document,
    close_document,
    code_actions,
    diagnostics,
    document_edits,
    open_document,
    replaced,
    send_unchecked,
    server_config,
    until,
    whole,
)

asyncio_module = pytest.mark.asyncio(loop_scope="module")
CASES = load_cases()
# The server runs the default rules (a project opts in to the others in its configuration).
DEFAULT_CODES = {rule.code for rule in select_rules()}
FIXED = [case for case in CASES if case.fixed and set(case.codes) <= DEFAULT_CODES]
SAFE = [case for case in FIXED if set(case.codes) == {"JF102"}]
UNSAFE_ONLY = [case for case in FIXED if set(case.codes) == {"JF101"}]
FIX_ALL = "source.fixAll.jaxfix"
CRASH_SERVER = Path(__file__).parent / "lsp_crash_server.py"

CACHED = """\
import functools

import jax


@functools.lru_cache
@jax.jit
def f(x):
    return x
"""
CLEAN = CACHED.replace("@functools.lru_cache\n", "")
# Non-ASCII text before the flagged call on its line: "π" is 1 UTF-16 unit (2 UTF-8 bytes),
# the emoji 2 units (4 bytes); both 1 code point.
WIDE = """\
import pickle

import jax

BLOBS = []


@jax.jit
def f(x):
    BLOBS.append(("π😀", pickle.dumps(x)))
    return x
"""
WIDE_LINE = 9  # 0-based


def capabilities(*encodings: str) -> types.ClientCapabilities:
    """VS Code's capabilities; with `encodings`, offering these position encodings."""
    base = client_capabilities("visual-studio-code")
    if not encodings:
        return base
    general = types.GeneralClientCapabilities(position_encodings=list(encodings))
    return attrs.evolve(base, general=general)


async def open_workspace(client: Client, root: Path, files: dict[str, str]) -> None:
    """Write `files` (by path under `root`) and start a session over `root` as a workspace."""
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    folder = types.WorkspaceFolder(uri=root.as_uri(), name="project")
    params = types.InitializeParams(capabilities=capabilities(), workspace_folders=[folder])
    await client.initialize_session(params)


@pytest_lsp.fixture(config=server_config("-m", "jaxfix.lsp"), scope="module")
async def client(lsp_client: Client) -> AsyncIterator[None]:
    await lsp_client.initialize_session(types.InitializeParams(capabilities=capabilities()))
    yield
    await lsp_client.shutdown_session()


@pytest_lsp.fixture(config=server_config(str(CRASH_SERVER)), scope="module")
async def utf8_client(lsp_client: Client) -> AsyncIterator[None]:
    params = types.InitializeParams(
        capabilities=capabilities(UTF8, UTF16),
        initialization_options={"jaxfix": {"severity": "error"}},
    )
    result = await lsp_client.initialize_session(params)
    assert result.capabilities.position_encoding == UTF8
    yield
    await lsp_client.shutdown_session()


@pytest_lsp.fixture(config=server_config("-m", "jaxfix.lsp"), loop_scope="module")
async def fresh_client(lsp_client: Client) -> AsyncIterator[None]:
    await lsp_client.initialize_session(types.InitializeParams(capabilities=capabilities()))
    yield


HELPERS = """\
import pickle

BLOBS = []


def record(x):
    BLOBS.append(pickle.dumps(x))
    return x
"""
TRAIN = """\
import jax

from pkg.helpers import record


@jax.jit
def step(x):
    record(x * 2)
    return x
"""


@pytest_lsp.fixture(config=server_config("-m", "jaxfix.lsp"), loop_scope="module")
async def project_client(lsp_client: Client, tmp_path: Path) -> AsyncIterator[None]:
    """A server whose workspace is `tmp_path`, holding a package in which a jitted function
    of one module calls a function of another that pickles what it is given."""
    await open_workspace(
        lsp_client,
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/helpers.py": HELPERS,
            "pkg/train.py": TRAIN,
        },
    )
    yield
    await lsp_client.shutdown_session()


def uri_of(tmp_path: Path, name: str = "doc.py") -> str:
    return (tmp_path / name).as_uri()


async def opened(client: Client, uri: str, text: str) -> list[types.Diagnostic]:
    open_document(client, uri, text)
    return await diagnostics(client, uri, 1)


# Positions, edits and settings, without a server.


def test_columns_count_the_negotiated_code_units() -> None:
    index = LineIndex(WIDE)
    line = WIDE.splitlines()[WIDE_LINE]
    column = line.index("pickle")
    assert index.position(WIDE_LINE + 1, column) == types.Position(WIDE_LINE, column + 1)
    assert LineIndex(WIDE, UTF8).position(WIDE_LINE + 1, column).character == column + 4
    assert LineIndex(WIDE, UTF32).position(WIDE_LINE + 1, column).character == column


@pytest.mark.parametrize(
    ("text", "end"),
    [
        ("a\nb\n", types.Position(2, 0)),
        ("a\r\nb😀", types.Position(1, 3)),
        ("", types.Position(0, 0)),
    ],
    ids=["terminated", "unterminated", "empty"],
)
def test_positions_past_the_text_are_its_end(text: str, end: types.Position) -> None:
    index = LineIndex(text)
    assert index.position(99, 0) == end
    assert index.position(*index.location(len(text))) == end


def test_a_line_edit_is_narrowed_to_what_changes() -> None:
    text = "x = 1\r\ny = f(a, b)\r\nz = 3\r\n"
    edit = TextEdit(2, 0, 3, 0, "y = f(a, c)\r\n")
    start, end, new_text = narrow(edit, LineIndex(text))
    assert (text[start:end], new_text) == ("b", "c")
    # No end of the edit falls between the `\r` and the `\n` of a line break.
    start, end, new_text = narrow(TextEdit(1, 0, 2, 0, "x = 1\rb\n"), LineIndex(text))
    assert (text[start:end], new_text) == ("\r\n", "\rb\n")


def test_kinds_cover_their_subkinds() -> None:
    assert wanted(FIX_ALL, None) and wanted(FIX_ALL, [types.CodeActionKind.Source])
    assert wanted(FIX_ALL, ["source.fixAll"]) and wanted(FIX_ALL, [FIX_ALL])
    assert not wanted(FIX_ALL, [types.CodeActionKind.QuickFix, "source.fix"])


def test_settings_take_a_known_severity_and_report_the_rest() -> None:
    settings, problems = read_settings({"jaxfix": {"severity": "hint"}}, Settings())
    assert settings.severity == types.DiagnosticSeverity.Hint and problems == []
    kept, problems = read_settings({"jaxfix": {"severity": "loud", "colour": 1}}, settings)
    assert kept == settings
    assert any("colour" in p for p in problems) and any("loud" in p for p in problems)
    assert read_settings({"other": {}}, settings) == (settings, [])


def test_a_computation_runs_once_per_request_and_settles() -> None:
    release = threading.Event()
    computed: list[Snapshot] = []

    def compute(snapshot: Snapshot) -> int:
        computed.append(snapshot)
        release.wait(10)
        return snapshot.version or 0

    async def scenario() -> None:
        cache = PerVersion(compute)
        first = Snapshot("file:///a.py", 1, "", Path("a.py"))
        answers = asyncio.gather(cache.get(first), cache.get(first))
        settled = asyncio.ensure_future(cache.settled(first.uri))
        await asyncio.sleep(0.05)
        assert not settled.done(), "settled while the computation runs"
        release.set()
        assert await answers == [1, 1]
        await settled
        assert await cache.get(first) == 1
        assert computed == [first]

    asyncio.run(scenario())


# Diagnostics.


@asyncio_module
async def test_diagnostics_appear_and_clear(client: Client, tmp_path: Path) -> None:
    uri = uri_of(tmp_path)
    (found,) = await opened(client, uri, CACHED)
    rule = find_rule("JF102")
    assert rule is not None
    assert (found.code, found.source, found.severity) == ("JF102", "jaxfix", 2)
    assert found.code_description is not None and found.code_description.href == rule_url(rule)
    assert found.range == types.Range(types.Position(5, 0), types.Position(5, 20))
    change_document(client, uri, 2, CLEAN)
    assert await diagnostics(client, uri, 2) == []
    change_document(client, uri, 3, CACHED)
    assert [d.code for d in await diagnostics(client, uri, 3)] == ["JF102"]
    close_document(client, uri)
    assert await diagnostics(client, uri, None) == []


@asyncio_module
async def test_a_memo_dicts_other_lines_are_related_information(
    client: Client, tmp_path: Path
) -> None:
    memo = Path(__file__).parent / "fixtures/hash_in_traced/module_memo_dict_dropped/before.py"
    uri = uri_of(tmp_path, "memo.py")
    (found,) = await opened(client, uri, memo.read_text())
    assert found.range.start == types.Position(9, 7)
    assert found.related_information is not None
    places = [(i.location.uri, i.location.range.start) for i in found.related_information]
    assert places == [(uri, types.Position(10, 15)), (uri, types.Position(12, 4))]
    close_document(client, uri)


@asyncio_module
async def test_changes_are_debounced_and_never_published_stale(
    client: Client, tmp_path: Path
) -> None:
    uri = uri_of(tmp_path)
    await opened(client, uri, CACHED)
    for version in range(2, 7):
        change_document(client, uri, version, CACHED if version % 2 else CLEAN)
    assert await diagnostics(client, uri, 6) == []
    versions = [p.version for p in client.published[uri]]
    assert versions == sorted(versions)
    assert len(versions) < 6, "every change was checked: no debounce"
    close_document(client, uri)


@asyncio_module
async def test_severity_follows_did_change_configuration(client: Client, tmp_path: Path) -> None:
    uri = uri_of(tmp_path)
    await opened(client, uri, CACHED)
    settings = {"jaxfix": {"severity": "hint"}}
    try:
        client.workspace_did_change_configuration(
            types.DidChangeConfigurationParams(settings=settings)
        )
        (found,) = await diagnostics(client, uri, 1, count=2)
        assert found.severity == types.DiagnosticSeverity.Hint
    finally:
        settings = {"jaxfix": {"severity": "warning"}}
        client.workspace_did_change_configuration(
            types.DidChangeConfigurationParams(settings=settings)
        )
    close_document(client, uri)


@asyncio_module
async def test_the_project_configuration_applies(client: Client, tmp_path: Path) -> None:
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text('[tool.jaxfix]\nignore = ["JF102"]\n')
    uri = uri_of(tmp_path / "pkg", "mod.py")
    assert await opened(client, uri, CACHED) == []
    assert any(r.method == types.WORKSPACE_DID_CHANGE_WATCHED_FILES for r in client.registrations)

    async def edited(content: str, count: int) -> list[str]:
        pyproject.write_text(content)
        event = types.FileEvent(uri=pyproject.as_uri(), type=types.FileChangeType.Changed)
        client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams([event]))
        return [d.code for d in await diagnostics(client, uri, 1, count=count)]

    assert await edited("[tool.jaxfix]\n", 2) == ["JF102"]
    assert await edited('[tool.jaxfix]\nignore = ["JF1"]\nbogus = 1\n', 3) == ["JF102"]
    await until(lambda: any("bogus" in m.message for m in client.messages), "a config error")
    close_document(client, uri)


# Code actions.


@asyncio_module
@pytest.mark.parametrize("case", FIXED, ids=lambda c: c.id)
async def test_quick_fixes_rewrite_the_fixture(client: Client, tmp_path: Path, case: Case) -> None:
    uri = uri_of(tmp_path)
    text = case.before.read_text()
    version = 1
    open_document(client, uri, text)
    for _ in range(len(case.codes) + 1):
        await diagnostics(client, uri, version)
        fixes = [
            a for a in await code_actions(client, uri, whole(text)) if a.title.startswith("jaxfix")
        ]
        if not fixes:
            break
        fix = fixes[0]
        assert fix.diagnostics is not None and fix.edit is not None
        rule = find_rule(str(fix.diagnostics[0].code))
        assert rule is not None
        # Its titles: `fix_title`, and those of its other fixes (`after_call_title`, ...), each
        # `{field}` standing for what the finding names.
        titles = [
            t for n in dir(rule) if n.endswith("_title") and isinstance(t := getattr(rule, n), str)
        ]
        patterns = [re.sub(r"\\\{\w+\\\}", ".+?", re.escape(t)) for t in titles]
        assert any(re.match(rf"jaxfix \({rule.code}\): {p}", fix.title) for p in patterns)
        assert fix.is_preferred is (rule.fix_safety is FixSafety.SAFE)
        edits = document_edits(fix.edit, uri)
        for edit in edits:  # each edit is narrowed to what it changes
            old = replaced(text, edit)
            assert not (old and edit.new_text and old[0] == edit.new_text[0])
            assert not (old and edit.new_text and old[-1] == edit.new_text[-1])
        text = apply(text, edits)
        version += 1
        change_document(client, uri, version, text)
    assert text == case.after.read_text()
    close_document(client, uri)


@asyncio_module
@pytest.mark.parametrize("case", SAFE, ids=lambda c: c.id)
async def test_fix_all_applies_the_safe_fixes(client: Client, tmp_path: Path, case: Case) -> None:
    uri = uri_of(tmp_path)
    text = case.before.read_text()
    await opened(client, uri, text)
    (action,) = [
        a for a in await code_actions(client, uri, whole(text), ["source"]) if a.kind == FIX_ALL
    ]
    assert action.edit is not None
    assert apply(text, document_edits(action.edit, uri)) == case.after.read_text()
    close_document(client, uri)


@asyncio_module
async def test_fix_all_only_when_asked_for_and_never_unsafe(client: Client, tmp_path: Path) -> None:
    uri = uri_of(tmp_path)
    assert await opened(client, uri, CACHED)
    everything = await code_actions(client, uri, whole(CACHED))
    assert [a.kind for a in everything] == ["quickfix", "quickfix"]  # the fix, the suppression
    assert [a.kind for a in await code_actions(client, uri, whole(CACHED), [FIX_ALL])] == [FIX_ALL]
    text = UNSAFE_ONLY[0].before.read_text()
    change_document(client, uri, 2, text)
    assert await diagnostics(client, uri, 2)
    assert await code_actions(client, uri, whole(text), [FIX_ALL]) == []
    close_document(client, uri)


MIXED = CACHED + "\n\n@jax.jit\ndef g(x):\n    if bool(x > 0):\n        return x\n    return -x\n"


@asyncio_module
async def test_a_range_with_fixable_and_unfixable_findings_offers_each_its_actions(
    client: Client, tmp_path: Path
) -> None:
    """The fixes' edits are computed for the fixable finding's line only; the other finding in
    the range keeps its suppression."""
    uri = uri_of(tmp_path)
    found = await opened(client, uri, MIXED)
    assert sorted(str(d.code) for d in found) == ["JF102", "JF104"]
    titles = [a.title for a in await code_actions(client, uri, whole(MIXED), ["quickfix"])]
    assert titles[0].startswith("jaxfix (JF102): Remove the cache decorator")
    assert titles[1:] == ["Suppress JF102 on this line", "Suppress JF104 on this line"]
    close_document(client, uri)


@asyncio_module
async def test_suppress_on_this_line(client: Client, tmp_path: Path) -> None:
    uri = uri_of(tmp_path)
    (found,) = await opened(client, uri, WIDE)
    actions = await code_actions(client, uri, found.range, ["quickfix"])
    (action,) = [a for a in actions if a.title == "Suppress JF101 on this line"]
    assert action.edit is not None and action.is_preferred is not True
    text = apply(WIDE, document_edits(action.edit, uri))
    assert text.splitlines()[WIDE_LINE].endswith("))  # jaxfix: ignore[JF101]")
    change_document(client, uri, 2, text)
    assert await diagnostics(client, uri, 2) == []
    close_document(client, uri)


@asyncio_module
async def test_where_host_code_waits_is_planned_when_the_fix_is_asked_for(
    client: Client, tmp_path: Path
) -> None:
    """The check leaves the scan for `jax.effects_barrier()` places to the code action: here
    the read of `BLOBS` is in the statement that runs `f`, so the hoist has no fix there."""
    uri = uri_of(tmp_path)
    text = WIDE + "\n\nprint(f(1.0), len(BLOBS))\n"
    (found,) = await opened(client, uri, text)
    assert found.code == "JF101" and "no host callback" not in found.message
    actions = await code_actions(client, uri, found.range, ["quickfix"])
    assert [a.title for a in actions] == ["Suppress JF101 on this line"]
    (fixable,) = await opened(client, uri_of(tmp_path, "waits.py"), WIDE + "\nprint(f(1.0))\n")
    (fix, _) = await code_actions(client, uri_of(tmp_path, "waits.py"), fixable.range)
    assert fix.title.startswith("jaxfix (JF101): Move the serialization to a host callback")
    for name in ("doc.py", "waits.py"):
        close_document(client, uri_of(tmp_path, name))


@asyncio_module
async def test_utf16_positions_before_the_fix(client: Client, tmp_path: Path) -> None:
    uri = uri_of(tmp_path)
    (found,) = await opened(client, uri, WIDE)
    line = WIDE.splitlines()[WIDE_LINE]
    start = line.index("pickle")
    units = len(line[:start].encode("utf-16-le")) // 2
    assert found.range.start == types.Position(WIDE_LINE, units)
    (fix,) = [a for a in await code_actions(client, uri, found.range) if a.title.startswith("jax")]
    assert fix.edit is not None
    expected = fix_text(WIDE, all_rules(), unsafe_fixes=True).text
    assert apply(WIDE, document_edits(fix.edit, uri)) == expected
    close_document(client, uri)


# Hover.


@asyncio_module
async def test_hover_shows_the_rule_docs(client: Client, tmp_path: Path) -> None:
    uri = uri_of(tmp_path)
    (found,) = await opened(client, uri, WIDE)
    document = types.TextDocumentIdentifier(uri=uri)
    inside = types.Position(WIDE_LINE, found.range.start.character + 3)
    result = await client.text_document_hover_async(types.HoverParams(document, inside))
    rule = find_rule("JF101")
    assert result is not None and rule is not None
    assert result.contents == types.MarkupContent(types.MarkupKind.Markdown, rule_doc(rule))
    assert result.range == found.range
    outside = types.Position(WIDE_LINE + 1, 0)
    assert await client.text_document_hover_async(types.HoverParams(document, outside)) is None
    close_document(client, uri)


# Bad input.


@asyncio_module
async def test_a_syntax_error_clears_diagnostics_and_fixes(client: Client, tmp_path: Path) -> None:
    uri = uri_of(tmp_path)
    (found,) = await opened(client, uri, CACHED)
    broken = CACHED.replace("return x", "return (x")
    change_document(client, uri, 2, broken)
    assert await diagnostics(client, uri, 2) == []
    assert await code_actions(client, uri, whole(broken), ["quickfix", "source"]) == []
    hover = types.HoverParams(types.TextDocumentIdentifier(uri=uri), found.range.start)
    assert await client.text_document_hover_async(hover) is None
    change_document(client, uri, 3, CACHED)
    assert [d.code for d in await diagnostics(client, uri, 3)] == ["JF102"]
    close_document(client, uri)


@asyncio_module
async def test_a_malformed_request_gets_an_error(client: Client, tmp_path: Path) -> None:
    uri = uri_of(tmp_path)
    bad = {"textDocument": {"uri": uri}, "position": "here"}
    with pytest.raises(JsonRpcException, match="Invalid Params"):
        await send_unchecked(client, types.TEXT_DOCUMENT_HOVER, bad)
    unknown = types.HoverParams(types.TextDocumentIdentifier(uri=uri), types.Position(0, 0))
    assert await client.text_document_hover_async(unknown) is None
    assert [d.code for d in await opened(client, uri, CACHED)] == ["JF102"]
    close_document(client, uri)


# The second server: UTF-8 positions, severity from initializationOptions, a crashing rule.


@asyncio_module
async def test_utf8_positions_when_negotiated(utf8_client: Client, tmp_path: Path) -> None:
    uri = uri_of(tmp_path)
    (found,) = await opened(utf8_client, uri, WIDE)
    line = WIDE.splitlines()[WIDE_LINE]
    start = len(line[: line.index("pickle")].encode("utf-8"))
    assert found.range.start == types.Position(WIDE_LINE, start)
    assert found.severity == types.DiagnosticSeverity.Error
    actions = await code_actions(utf8_client, uri, found.range)
    (fix,) = [a for a in actions if a.title.startswith("jaxfix")]
    assert fix.edit is not None
    expected = fix_text(WIDE, all_rules(), unsafe_fixes=True).text
    assert apply(WIDE, document_edits(fix.edit, uri), "utf-8") == expected
    close_document(utf8_client, uri)


@asyncio_module
async def test_a_rule_crash_is_reported_not_fatal(utf8_client: Client, tmp_path: Path) -> None:
    crashing = uri_of(tmp_path, "crash.py")
    text = CACHED.replace("def f(", "def explode(")
    assert await opened(utf8_client, crashing, text) == []
    await until(
        lambda: any("the rule exploded" in m.message for m in utf8_client.messages), "a report"
    )
    assert any("the rule exploded" in m.message for m in utf8_client.log_messages)
    other = uri_of(tmp_path, "other.py")
    assert [d.code for d in await opened(utf8_client, other, CACHED)] == ["JF102"]
    for uri in (crashing, other):
        close_document(utf8_client, uri)


# Shutdown.


@asyncio_module
async def test_shutdown_then_exit_ends_the_server(fresh_client: Client, tmp_path: Path) -> None:
    uri = uri_of(tmp_path)
    assert await opened(fresh_client, uri, CACHED)
    change_document(fresh_client, uri, 2, CLEAN)  # a check still pending at shutdown
    await fresh_client.shutdown_session()
    assert fresh_client._server is not None and fresh_client._server.returncode == 0


# The workspace.


def shown_codes(client: Client, uri: str) -> list[str | int | None]:
    return [d.code for d in client.diagnostics.get(uri, [])]


def save(client: Client, path: Path, version: int, text: str) -> None:
    """The editor changes an open document and saves it."""
    change_document(client, path.as_uri(), version, text)
    path.write_text(text)
    document = types.TextDocumentIdentifier(uri=path.as_uri())
    client.text_document_did_save(types.DidSaveTextDocumentParams(text_document=document))


@asyncio_module
async def test_a_finding_from_another_file_follows_that_file(
    project_client: Client, tmp_path: Path
) -> None:
    """`record` pickles a tracer only because `train.py` jits its caller: the finding in the
    open `helpers.py` appears with the workspace's analysis, goes when `train.py` is saved
    without the jit, and comes back with it; its fix is offered as in `jaxfix check .`."""
    helpers, train = tmp_path / "pkg" / "helpers.py", tmp_path / "pkg" / "train.py"
    open_document(project_client, helpers.as_uri(), HELPERS)
    await until(lambda: shown_codes(project_client, helpers.as_uri()) == ["JF101"], "JF101")
    (found,) = project_client.diagnostics[helpers.as_uri()]
    assert "called from traced `pkg.train.step`" in found.message
    (fix, _) = await code_actions(project_client, helpers.as_uri(), found.range)
    assert fix.title.startswith("jaxfix (JF101): Move the serialization to a host callback")

    open_document(project_client, train.as_uri(), TRAIN)
    save(project_client, train, 2, TRAIN.replace("@jax.jit\n", ""))
    await until(lambda: shown_codes(project_client, helpers.as_uri()) == [], "no finding")
    save(project_client, train, 3, TRAIN)
    await until(lambda: shown_codes(project_client, helpers.as_uri()) == ["JF101"], "JF101")


STEPS = """\
import pickle

import jax
import jax.numpy as jnp

SNAPS = []


@jax.jit
def step(x):
    h = jnp.tanh(x)
    SNAPS.append(pickle.dumps(h))
    return h * 2
"""
RUN = """\
import jax.numpy as jnp

from pkg import steps

out = steps.step(jnp.ones(3))
print(len(steps.SNAPS))
"""


@pytest_lsp.fixture(config=server_config("-m", "jaxfix.lsp"), loop_scope="module")
async def waits_client(lsp_client: Client, tmp_path: Path) -> AsyncIterator[None]:
    """A workspace whose `run.py` reads, right after calling it, what `pkg.steps.step`
    writes: a host callback's fix there needs a barrier in `run.py`."""
    await open_workspace(
        lsp_client,
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/steps.py": STEPS,
            "run.py": RUN,
        },
    )
    yield
    await lsp_client.shutdown_session()


@asyncio_module
async def test_a_fix_over_two_files_is_one_workspace_edit(
    waits_client: Client, tmp_path: Path
) -> None:
    """The quick fix of the callback in `steps.py` edits `run.py` too (its barrier), in one
    workspace edit; `run.py` shows no finding of its own."""
    steps, run = tmp_path / "pkg" / "steps.py", tmp_path / "run.py"
    open_document(waits_client, steps.as_uri(), STEPS)
    await until(lambda: shown_codes(waits_client, steps.as_uri()) == ["JF101"], "JF101")
    (found,) = waits_client.diagnostics[steps.as_uri()]

    async def edited_documents() -> dict[str, types.TextDocumentEdit]:
        fix, _ = await code_actions(waits_client, steps.as_uri(), found.range)
        assert fix.title.startswith("jaxfix (JF101): Move the serialization to a host callback")
        assert fix.edit is not None and fix.edit.document_changes is not None
        return {
            change.text_document.uri: change
            for change in fix.edit.document_changes
            if isinstance(change, types.TextDocumentEdit)
        }

    edited = await edited_documents()
    for _ in range(200):  # until the workspace's run has told `run.py` of the function
        if len(edited) > 1:
            break
        await asyncio.sleep(0.05)
        edited = await edited_documents()
    assert set(edited) == {steps.as_uri(), run.as_uri()}
    barrier = "".join(e.new_text for e in edited[run.as_uri()].edits)
    assert "jax.effects_barrier()" in barrier
    open_document(waits_client, run.as_uri(), RUN)
    await until(lambda: run.as_uri() in waits_client.diagnostics, "run.py checked")
    assert shown_codes(waits_client, run.as_uri()) == []


SAVER = 'import numpy as np\n\n\ndef save(v):\n    np.save("v.npy", v)\n'
JITTED = (
    "import jax\n\nfrom pkg import helpers\n\n\n@jax.jit\ndef step(x):\n"
    "    helpers.save(x)\n    return x\n"
)
READER = (
    "import jax.numpy as jnp\nimport numpy as np\n\nfrom pkg import steps\n\n"
    'steps.step(jnp.ones(3))\nprint(np.load("v.npy"))\n'
)


@pytest_lsp.fixture(config=server_config("-m", "jaxfix.lsp"), loop_scope="module")
async def chain_client(lsp_client: Client, tmp_path: Path) -> AsyncIterator[None]:
    """A workspace whose `main.py` reads what `pkg.helpers.save` writes, which it runs
    through `pkg.steps.step`: the barrier the callback's fix needs is two modules away."""
    await open_workspace(
        lsp_client,
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/helpers.py": SAVER,
            "pkg/steps.py": JITTED,
            "main.py": READER,
        },
    )
    yield
    await lsp_client.shutdown_session()


@asyncio_module
async def test_a_fix_edits_the_reader_of_a_function_that_runs_it(
    chain_client: Client, tmp_path: Path
) -> None:
    """The quick fix of the callback in `helpers.py` puts the barrier in `main.py`, which was
    told of `steps.step` (that runs `save`), not of `save` itself."""
    helpers, main = tmp_path / "pkg" / "helpers.py", tmp_path / "main.py"
    open_document(chain_client, helpers.as_uri(), SAVER)
    await until(lambda: shown_codes(chain_client, helpers.as_uri()) == ["JF101"], "JF101")
    (found,) = chain_client.diagnostics[helpers.as_uri()]
    uris: set[str] = set()
    for _ in range(200):  # until the workspace's run has told `main.py`
        fix, _ = await code_actions(chain_client, helpers.as_uri(), found.range)
        assert fix.edit is not None and fix.edit.document_changes is not None
        uris = {
            c.text_document.uri
            for c in fix.edit.document_changes
            if isinstance(c, types.TextDocumentEdit)
        }
        if main.as_uri() in uris:
            break
        await asyncio.sleep(0.05)
    assert uris == {helpers.as_uri(), main.as_uri()}


CHECKPOINTS = """\
import pickle


def save(params, name):
    with open(f"{name}.pkl", "wb") as f:
        pickle.dump(params, f)
"""
UPDATE = """\
import jax

from pkg import checkpoints


@jax.jit
def update(params):
    params = params * 0.5
    checkpoints.save(params, "latest")
    return params
"""
TRAIN_LOOP = """\
import pickle

import jax.numpy as jnp

from pkg.steps import update

params = update(jnp.ones(2))
with open("latest.pkl", "rb") as f:
    print(pickle.load(f))
"""


@pytest_lsp.fixture(config=server_config("-m", "jaxfix.lsp"), loop_scope="module")
async def helper_client(lsp_client: Client, tmp_path: Path) -> AsyncIterator[None]:
    """A workspace whose jitted `pkg.steps.update` calls `pkg.checkpoints.save`, which pickles
    into a file its caller names: only the call in `steps.py` can leave the trace."""
    await open_workspace(
        lsp_client,
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/checkpoints.py": CHECKPOINTS,
            "pkg/steps.py": UPDATE,
            "main.py": TRAIN_LOOP,
        },
    )
    yield
    await lsp_client.shutdown_session()


async def helper_fix(client: Client, helper: Path) -> dict[str, list[types.TextEdit]]:
    """The edits, by document, of the first action offered on the finding of the open
    `helper`: its fix (the suppression comes after it)."""
    open_document(client, helper.as_uri(), CHECKPOINTS)
    await until(lambda: shown_codes(client, helper.as_uri()) == ["JF101"], "JF101")
    (found,) = client.diagnostics[helper.as_uri()]
    for _ in range(200):  # until the workspace's run has heard from `steps.py`
        actions = await code_actions(client, helper.as_uri(), found.range)
        if any(a.title.startswith("jaxfix (JF101): ") for a in actions):
            break
        await asyncio.sleep(0.05)
    fix, *rest = actions
    assert fix.title.startswith("jaxfix (JF101): ")
    assert any(a.title.startswith("Suppress JF101") for a in rest)
    assert fix.edit is not None and fix.edit.document_changes is not None
    return {
        c.text_document.uri: [e for e in c.edits if isinstance(e, types.TextEdit)]
        for c in fix.edit.document_changes
        if isinstance(c, types.TextDocumentEdit)
    }


@asyncio_module
async def test_a_helper_modules_finding_offers_first_the_fix_in_its_callers_module(
    helper_client: Client, tmp_path: Path
) -> None:
    """Opening `checkpoints.py`, whose finding comes from the jitted caller in `steps.py`: the
    first action is the fix, one workspace edit that moves the call in `steps.py` (and makes
    `main.py` wait for it), the same edits as `jaxfix apply` over the project; the suppression
    comes after it."""
    checkpoints, steps, main = (
        tmp_path / "pkg" / "checkpoints.py",
        tmp_path / "pkg" / "steps.py",
        tmp_path / "main.py",
    )
    edited = await helper_fix(helper_client, checkpoints)
    assert set(edited) == {steps.as_uri(), main.as_uri()}
    project = tmp_path / "copy"
    shutil.copytree(tmp_path, project, ignore=shutil.ignore_patterns("copy", ".jaxfix_cache"))
    result = CliRunner().invoke(cli_main, ["apply", "--unsafe-fixes", "--no-cache", str(project)])
    assert result.exit_code == 0, result.output
    for path, text in ((steps, UPDATE), (main, TRAIN_LOOP)):
        applied = apply(text, edited[path.as_uri()])
        assert applied == (project / path.relative_to(tmp_path)).read_text()
    assert (project / "pkg" / "checkpoints.py").read_text() == CHECKPOINTS


@pytest.mark.jax
@asyncio_module
async def test_the_helper_modules_fix_leaves_the_project_running(
    helper_client: Client, tmp_path: Path
) -> None:
    """The project, which fails under jax as it is, runs once the editor applies the fix that
    `checkpoints.py` offers first, with callbacks deferred as on an accelerator, and prints
    what it pickled."""
    edited = await helper_fix(helper_client, tmp_path / "pkg" / "checkpoints.py")
    project = tmp_path / "fixed"
    shutil.copytree(tmp_path, project, ignore=shutil.ignore_patterns("fixed", ".jaxfix_cache"))
    for uri, edits in edited.items():
        path = project / Path(to_fs_path(uri) or uri).relative_to(tmp_path)
        path.write_text(apply(path.read_text(), edits))
    (before,) = run_programs([tmp_path / "main.py"])
    (after,) = run_programs([project / "main.py"], callbacks=Callbacks.DEFERRED)
    assert before.error is not None and before.error[0] == "ConcretizationTypeError"
    assert after.error is None, after.error
    assert after.stdout == "[0.5 0.5]\n"
