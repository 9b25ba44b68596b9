"""A pytest-lsp client that keeps every publishDiagnostics (with its version) and the
capabilities the server registers, and a text-edit applier written independently of the
server's position code, to judge its edits."""

from __future__ import annotations

import asyncio
import itertools
import re
import sys
import uuid
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from typing import Any

from lsprotocol import types
from pygls.protocol import default_converter
from pytest_lsp import ClientServerConfig, LanguageClient
from pytest_lsp.client import DEFAULT_CLIENT_FEATURES, register_lsp_features

TIMEOUT = 20.0  # seconds: generous, for a loaded CI machine
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")


class Client(LanguageClient):
    published: dict[str, list[types.PublishDiagnosticsParams]]
    registrations: list[types.Registration]


def publish(client: Client, params: types.PublishDiagnosticsParams) -> None:
    client.published.setdefault(params.uri, []).append(params)
    client.diagnostics[params.uri] = params.diagnostics


def register(client: Client, params: types.RegistrationParams) -> None:
    client.registrations.extend(params.registrations)


def make_client() -> Client:
    client = Client(converter_factory=default_converter)
    client.published = {}
    client.registrations = []
    features = {
        **DEFAULT_CLIENT_FEATURES,
        types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS: publish,
        types.CLIENT_REGISTER_CAPABILITY: register,
    }
    register_lsp_features(client, features)
    return client


async def send_unchecked(client: Client, method: str, params: dict[str, Any]) -> Any:
    """The answer to a request sent as written, unchecked by the LSP types (pygls's own
    request builder refuses what does not match them)."""
    future: Future[Any] = Future()
    msg_id = str(uuid.uuid4())
    client.protocol._request_futures[msg_id] = future
    client.protocol._send_data({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
    return await asyncio.wrap_future(future)


def server_config(*command: str) -> ClientServerConfig:
    return ClientServerConfig(server_command=[sys.executable, *command], client_factory=make_client)


async def until(condition: Callable[[], bool], what: str) -> None:
    """Wait until `condition()` holds."""
    deadline = asyncio.get_running_loop().time() + TIMEOUT
    while not condition():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.005)


async def diagnostics(
    client: Client, uri: str, version: int | None, count: int = 1
) -> list[types.Diagnostic]:
    """The diagnostics of the `count`-th publication for `version` of the document."""

    def matching() -> list[types.PublishDiagnosticsParams]:
        return [p for p in client.published.get(uri, []) if p.version == version]

    await until(lambda: len(matching()) >= count, f"diagnostics of {uri} v{version}")
    return list(matching()[count - 1].diagnostics)


def open_document(client: Client, uri: str, text: str) -> None:
    item = types.TextDocumentItem(uri=uri, language_id="python", version=1, text=text)
    client.text_document_did_open(types.DidOpenTextDocumentParams(text_document=item))


def change_document(client: Client, uri: str, version: int, text: str) -> None:
    document = types.VersionedTextDocumentIdentifier(uri=uri, version=version)
    change = types.TextDocumentContentChangeWholeDocument(text=text)
    params = types.DidChangeTextDocumentParams(text_document=document, content_changes=[change])
    client.text_document_did_change(params)


def close_document(client: Client, uri: str) -> None:
    document = types.TextDocumentIdentifier(uri=uri)
    client.text_document_did_close(types.DidCloseTextDocumentParams(text_document=document))


async def code_actions(
    client: Client, uri: str, where: types.Range, only: list[str] | None = None
) -> list[types.CodeAction]:
    params = types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        range=where,
        context=types.CodeActionContext(diagnostics=[], only=only),
    )
    result = await client.text_document_code_action_async(params)
    assert all(isinstance(action, types.CodeAction) for action in result or [])
    return [action for action in result or [] if isinstance(action, types.CodeAction)]


def whole(text: str) -> types.Range:
    return types.Range(types.Position(0, 0), types.Position(len(_LINE.findall(text)) + 1, 0))


def _width(char: str, encoding: str) -> int:
    if encoding == "utf-8":
        return len(char.encode("utf-8"))
    if encoding == "utf-32":
        return 1
    return 2 if ord(char) > 0xFFFF else 1


def offset(text: str, position: types.Position, encoding: str = "utf-16") -> int:
    """The index in `text` of an LSP position counted in `encoding`'s code units."""
    lines = _LINE.findall(text)
    if position.line >= len(lines):
        return len(text)
    start = sum(len(line) for line in lines[: position.line])
    body = lines[position.line].rstrip("\r\n")
    units = 0
    for index, char in enumerate(body):
        if units >= position.character:
            return start + index
        units += _width(char, encoding)
    return start + len(body)


def document_edits(edit: types.WorkspaceEdit, uri: str) -> list[types.TextEdit]:
    """The edits of `uri` in `edit`, whichever form it takes."""
    if edit.changes is not None:
        return list(edit.changes[uri])
    edits: list[types.TextEdit] = []
    for change in edit.document_changes or []:
        assert isinstance(change, types.TextDocumentEdit)
        assert change.text_document.uri == uri
        edits += [e for e in change.edits if isinstance(e, types.TextEdit)]
    return edits


def replaced(text: str, edit: types.TextEdit, encoding: str = "utf-16") -> str:
    return text[offset(text, edit.range.start, encoding) : offset(text, edit.range.end, encoding)]


def apply(text: str, edits: Sequence[types.TextEdit], encoding: str = "utf-16") -> str:
    """`text` with LSP `edits` (all relative to `text`, not overlapping) applied."""
    spans = [
        (offset(text, e.range.start, encoding), offset(text, e.range.end, encoding), e.new_text)
        for e in edits
    ]
    spans.sort(key=lambda span: span[:2])
    for (_, end, _), (start, _, _) in itertools.pairwise(spans):
        assert end <= start, "overlapping edits"
    for start, end, new_text in reversed(spans):
        text = text[:start] + new_text + text[end:]
    return text
