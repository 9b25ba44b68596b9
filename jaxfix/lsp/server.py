"""The language server: pygls features over the analysis of open Python documents and
notebooks (a notebook's code cells analysed as one text, its diagnostics published per cell:
`jaxfix.lsp.notebooks`).

Diagnostics are published on open and save, and on change after a short debounce; each
analysis runs in a worker thread, one at a time per document, and its result is dropped when
the document changed (or closed) meanwhile. Code actions and hover answer for the text the
editor has now, from results computed once per document version. What the workspace's other
files tell a document (`jaxfix.lsp.workspace`) is found again whenever a Python file or a
configuration is saved, and the open documents are checked again with it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from jaxfix import __version__
from jaxfix.lsp import actions, analysis, convert
from jaxfix.lsp.analysis import Analysis, FixRequest, PerVersion, Snapshot
from jaxfix.lsp.hover import hover as hover_at
from jaxfix.lsp.notebooks import CellText, NotebookText
from jaxfix.lsp.positions import UTF16, LineIndex
from jaxfix.lsp.protocol import JaxfixProtocol
from jaxfix.lsp.settings import Settings, read_settings
from jaxfix.lsp.workspace import Workspace
from jaxfix.models.diagnostic import Diagnostic

# Seconds without a change before a changed document is checked: enough to take a burst of
# changes sent together as one. Typing faster than a check takes queues no work: a document is
# checked by one thread at a time, then at its latest version.
DEBOUNCE = 0.01
PYPROJECT = "pyproject.toml"
PYTHON_SUFFIXES = (".py", ".pyi")
WATCHED = (PYPROJECT, "*.py")  # the files whose changes the client is asked to report
# Notebooks whose Python cells the client sends (`notebookDocument/*`), as Ruff's server asks.
NOTEBOOK_SYNC = types.NotebookDocumentSyncOptions(
    notebook_selector=[
        types.NotebookDocumentFilterWithCells(
            cells=[types.NotebookCellLanguage(language="python")], notebook="jupyter-notebook"
        )
    ],
    save=True,
)


class JaxfixServer(LanguageServer):
    """The server's state: the open Python documents, the settings, the analyses."""

    def __init__(self) -> None:
        super().__init__(
            "jaxfix",
            __version__,
            text_document_sync_kind=types.TextDocumentSyncKind.Full,
            notebook_document_sync=NOTEBOOK_SYNC,
            protocol_cls=JaxfixProtocol,
        )
        self.settings = Settings()
        self.generation = 0  # of the projects' pyproject.toml files
        self.open: set[str] = set()
        self.notebooks: set[str] = set()  # the open notebooks' URIs
        self.checks = PerVersion(analysis.check)
        self.fixes = PerVersion(analysis.with_edits)
        self.fixed = PerVersion(analysis.fixed_text)
        self._pending: dict[str, asyncio.Task[None]] = {}
        self._shown: set[str] = set()
        self.project = Workspace(self.schedule_all, self.log)

    def snapshot(self, uri: str) -> Snapshot | None:
        """The document's current version, if it is an open Python document or notebook."""
        if (notebook := self.notebook(uri)) is not None:
            path = Path(to_fs_path(uri) or uri)
            project = self.project.job(path)
            return Snapshot(uri, notebook.version, notebook.text, path, self.generation, project)
        if uri not in self.open:
            return None
        document = self.workspace.get_text_document(uri)
        path = Path(document.path)
        project = self.project.job(path)
        return Snapshot(uri, document.version, document.source, path, self.generation, project)

    def notebook(self, uri: str) -> NotebookText | None:
        """The open notebook's code cells as the editor has them now."""
        if uri not in self.notebooks:
            return None
        notebook = self.workspace.get_notebook_document(notebook_uri=uri)
        if notebook is None:
            return None
        cells = []
        for cell in notebook.cells:
            document = self.workspace.get_text_document(cell.document)
            if cell.kind == types.NotebookCellKind.Code and document.language_id in (
                None,
                "python",
            ):
                cells.append(CellText(cell.document, document.version, document.source))
        return NotebookText(uri, notebook.version, tuple(cells))

    def notebook_of(self, cell_uri: str) -> str | None:
        """The URI of the open notebook that holds a cell."""
        notebook = self.workspace.get_notebook_document(cell_uri=cell_uri)
        return notebook.uri if notebook is not None and notebook.uri in self.notebooks else None

    def index(self, snapshot: Snapshot) -> LineIndex:
        return LineIndex(snapshot.text, self.workspace.position_encoding or UTF16)

    def schedule(self, uri: str, delay: float) -> None:
        """Check the document after `delay` seconds, instead of any check still pending."""
        self.cancel(uri)
        task = asyncio.ensure_future(self._check_later(uri, delay))
        self._pending[uri] = task
        task.add_done_callback(lambda done: self._task_done(uri, done))

    def cancel(self, uri: str) -> None:
        if (pending := self._pending.pop(uri, None)) is not None:
            pending.cancel()

    def schedule_all(self) -> None:
        for uri in self.open | self.notebooks:
            self.schedule(uri, 0)

    def closed(self, uri: str, documents: set[str]) -> None:
        """Forget a document (or notebook) the editor closed: its pending check, its results."""
        documents.discard(uri)
        self.cancel(uri)
        for cache in (self.checks, self.fixes, self.fixed):
            cache.forget(uri)

    def cancel_all(self) -> None:
        for task in self._pending.values():
            task.cancel()

    def project_changed(self) -> None:
        """A pyproject.toml changed: analyse every open document again with its settings."""
        self.generation += 1
        self._shown.clear()
        self.schedule_all()
        self.project.refresh()

    def _task_done(self, uri: str, task: asyncio.Task[None]) -> None:
        if self._pending.get(uri) is task:
            del self._pending[uri]
        if not task.cancelled() and (error := task.exception()) is not None:
            self.log(f"checking {uri} failed: {type(error).__name__}: {error}", error=True)

    async def _check_later(self, uri: str, delay: float) -> None:
        await asyncio.sleep(delay)
        await self.checks.settled(uri)
        snapshot = self.snapshot(uri)
        if snapshot is None:
            return
        found = await self.checks.get(snapshot)
        if self.snapshot(uri) != snapshot:
            return  # changed or closed meanwhile: a newer check publishes
        self._report(found)
        index = self.index(snapshot)
        severity = self.settings.severity
        shown = [convert.diagnostic(d, index, severity, uri) for d in found.diagnostics]
        if (notebook := self.notebook(uri)) is None:
            self.publish(uri, shown, snapshot.version)
            return
        for cell, in_cell in notebook.by_cell(shown).items():
            self.publish(cell, in_cell, None)

    def publish(self, uri: str, shown: list[types.Diagnostic], version: int | None) -> None:
        params = types.PublishDiagnosticsParams(uri=uri, diagnostics=shown, version=version)
        self.text_document_publish_diagnostics(params)

    def _report(self, found: Analysis) -> None:
        """Tell the user about an unusable pyproject.toml or a crash, and log why a document
        could not be analysed (a syntax error, while typing, is no news)."""
        if found.config_error is not None:
            self.show_once(f"jaxfix: {found.config_error} (using the default settings)")
        if found.crashed:
            self.show_once(f"jaxfix: {found.error}")
        elif found.error is not None:
            self.log(found.error)

    def show_once(self, message: str) -> None:
        """Show and log an error unless it was shown since the settings last changed (it
        would come back at every keystroke)."""
        if message not in self._shown:
            self._shown.add(message)
            self.log(message, error=True)
            params = types.ShowMessageParams(type=types.MessageType.Error, message=message)
            self.window_show_message(params)

    def log(self, message: str, error: bool = False) -> None:
        kind = types.MessageType.Error if error else types.MessageType.Log
        self.window_log_message(types.LogMessageParams(type=kind, message=message))

    def apply_settings(self, raw: object) -> None:
        self.settings, problems = read_settings(raw, self.settings)
        for problem in problems:
            self.log(f"jaxfix settings: {problem}", error=True)

    def elsewhere(self, found: Diagnostic, snapshot: Snapshot) -> actions.Elsewhere | None:
        """The edits `found`'s fix makes in the workspace's other documents (see
        `analysis.parts_elsewhere`), by URI and version; None when they are not known."""
        opened = {uri: self.workspace.get_text_document(uri) for uri in sorted(self.open)}
        documents = {Path(document.path): uri for uri, document in opened.items()}
        texts = {path: opened[uri].source for path, uri in documents.items()}
        parts = analysis.parts_elsewhere(found, snapshot, self.project.jobs, texts)
        if parts is None:
            return None
        encoding = self.workspace.position_encoding or UTF16
        result: dict[str, tuple[int | None, Sequence[types.TextEdit]]] = {}
        for part in parts:
            uri = documents.get(part.path, part.path.as_uri())
            version = opened[uri].version if uri in opened else None
            index = LineIndex(part.text, encoding)
            result[uri] = (version, convert.text_edits(part.edits, index))
        return result

    def target(self, snapshot: Snapshot, cell: str | None = None) -> actions.Target:
        """What the actions asked for in the document (or in a `cell` of the notebook
        `snapshot` is of) edit."""
        workspace = self.client_capabilities.workspace
        edit = workspace.workspace_edit if workspace else None
        versioned = bool(edit and edit.document_changes)
        index = self.index(snapshot)
        notebook = self.notebook(snapshot.uri) if cell is not None else None
        return actions.Target(
            snapshot.uri,
            snapshot.version,
            index,
            self.settings.severity,
            versioned,
            notebook,
            cell,
        )

    def asked(self, uri: str) -> tuple[Snapshot | None, str | None]:
        """The snapshot a request about `uri` is answered from, and the cell it names: a
        notebook's cell is answered from the whole notebook."""
        notebook = self.notebook_of(uri)
        if notebook is None:
            return self.snapshot(uri), None
        return self.snapshot(notebook), uri

    def markdown(self) -> bool:
        """Whether the client shows Markdown in hovers (one that does not say is assumed to)."""
        document = self.client_capabilities.text_document
        formats = document.hover.content_format if document and document.hover else None
        return formats is None or types.MarkupKind.Markdown in formats

    def report_server_error(self, error: Exception, source: type[Exception]) -> None:
        """Log what pygls could not handle (a malformed message, a failing handler)."""
        self.log(f"{source.__name__}: {error}", error=True)


def initialize(ls: JaxfixServer, params: types.InitializeParams) -> None:
    ls.apply_settings(params.initialization_options)


async def initialized(ls: JaxfixServer, params: types.InitializedParams) -> None:
    """Check the workspace's files, and ask the client to report changes of them and of
    pyproject.toml files, where it can."""
    folders = [to_fs_path(folder.uri) for folder in ls.workspace.folders.values()]
    roots = [Path(f) for f in folders if f] or (
        [Path(ls.workspace.root_path)] if ls.workspace.root_path else []
    )
    ls.project.roots = tuple(roots)
    ls.project.refresh()
    workspace = ls.client_capabilities.workspace
    watched = workspace.did_change_watched_files if workspace else None
    if watched is None or not watched.dynamic_registration:
        return
    watchers = [types.FileSystemWatcher(glob_pattern=f"**/{name}") for name in WATCHED]
    registration = types.Registration(
        id="jaxfix-files",
        method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
        register_options=types.DidChangeWatchedFilesRegistrationOptions(watchers=watchers),
    )
    try:
        await ls.client_register_capability_async(types.RegistrationParams([registration]))
    except JsonRpcException as error:  # saving the files in the editor still applies them
        ls.log(f"cannot watch {' and '.join(WATCHED)} files: {error}")


def did_open(ls: JaxfixServer, params: types.DidOpenTextDocumentParams) -> None:
    document = params.text_document
    if document.language_id == "python" or document.uri.endswith(PYTHON_SUFFIXES):
        ls.open.add(document.uri)
        ls.schedule(document.uri, 0)


def did_change(ls: JaxfixServer, params: types.DidChangeTextDocumentParams) -> None:
    if params.text_document.uri in ls.open:
        ls.schedule(params.text_document.uri, DEBOUNCE)


def did_save(ls: JaxfixServer, params: types.DidSaveTextDocumentParams) -> None:
    uri = params.text_document.uri
    if uri.endswith(f"/{PYPROJECT}"):
        ls.project_changed()
    elif uri.endswith(PYTHON_SUFFIXES):
        ls.project.refresh()  # other documents may depend on it
        if uri in ls.open:
            ls.schedule(uri, 0)


def did_close(ls: JaxfixServer, params: types.DidCloseTextDocumentParams) -> None:
    uri = params.text_document.uri
    if uri in ls.open:
        ls.closed(uri, ls.open)
        ls.publish(uri, [], None)


def did_open_notebook(ls: JaxfixServer, params: types.DidOpenNotebookDocumentParams) -> None:
    ls.notebooks.add(params.notebook_document.uri)
    ls.schedule(params.notebook_document.uri, 0)


def did_change_notebook(ls: JaxfixServer, params: types.DidChangeNotebookDocumentParams) -> None:
    if params.notebook_document.uri in ls.notebooks:
        ls.schedule(params.notebook_document.uri, DEBOUNCE)


def did_save_notebook(ls: JaxfixServer, params: types.DidSaveNotebookDocumentParams) -> None:
    if params.notebook_document.uri in ls.notebooks:
        ls.schedule(params.notebook_document.uri, 0)


def did_close_notebook(ls: JaxfixServer, params: types.DidCloseNotebookDocumentParams) -> None:
    uri = params.notebook_document.uri
    if uri in ls.notebooks:
        ls.closed(uri, ls.notebooks)
        for cell in params.cell_text_documents:
            ls.publish(cell.uri, [], None)


def did_change_watched_files(ls: JaxfixServer, params: types.DidChangeWatchedFilesParams) -> None:
    if any(change.uri.endswith(f"/{PYPROJECT}") for change in params.changes):
        ls.project_changed()
    elif any(change.uri.endswith(PYTHON_SUFFIXES) for change in params.changes):
        ls.project.refresh()


def did_change_configuration(ls: JaxfixServer, params: types.DidChangeConfigurationParams) -> None:
    ls.apply_settings(params.settings)
    ls.schedule_all()


async def code_action(
    ls: JaxfixServer, params: types.CodeActionParams
) -> list[types.CodeAction] | None:
    """Quick fixes and suppressions at the range; fix-all when asked for by kind. The fixes'
    edits are computed only when a fixable finding is in the range (editors ask at every
    move of the cursor)."""
    snapshot, cell = ls.asked(params.text_document.uri)
    if snapshot is None:
        return None
    only: Sequence[str] | None = params.context.only
    target = ls.target(snapshot, cell)
    found: list[types.CodeAction] = []
    if actions.wanted(actions.QUICK_FIX, only):
        checked = await ls.checks.get(snapshot)
        here = actions.touching(checked.diagnostics, params.range, target)
        lines = frozenset(d.line for d in here if d.fix_safety is not None)
        if lines:
            fixes = await ls.fixes.get(FixRequest(snapshot, lines))  # those lines' findings
            here = actions.with_fixes(here, fixes)
        elsewhere = {
            d.moves: await asyncio.to_thread(ls.elsewhere, d, snapshot)
            for d in here
            if d.moves and d.fix_safety is not None
        }
        found += await asyncio.to_thread(
            actions.line_actions, here, target, lambda d: elsewhere.get(d.moves, {})
        )
    if only is not None and actions.wanted(actions.FIX_ALL, only):
        new_text = await ls.fixed.get(snapshot)
        if new_text is not None:
            found.append(actions.fix_all(new_text, target))
    return found


async def hover(ls: JaxfixServer, params: types.HoverParams) -> types.Hover | None:
    snapshot, cell = ls.asked(params.text_document.uri)
    if snapshot is None:
        return None
    found = await ls.checks.get(snapshot)
    if cell is None:
        return hover_at(found.diagnostics, ls.index(snapshot), params.position, ls.markdown())
    notebook = ls.notebook(snapshot.uri)
    start = notebook.start_of(cell) if notebook is not None else None
    if start is None:
        return None
    position = types.Position(params.position.line + start, params.position.character)
    shown = hover_at(found.diagnostics, ls.index(snapshot), position, ls.markdown())
    if shown is None or shown.range is None:
        return shown
    moved = [
        types.Position(p.line - start, p.character) for p in (shown.range.start, shown.range.end)
    ]
    return types.Hover(shown.contents, types.Range(*moved))


def shutdown(ls: JaxfixServer, params: None) -> None:
    ls.cancel_all()


FEATURES: list[tuple[str, Any, object]] = [
    (types.INITIALIZE, initialize, None),
    (types.INITIALIZED, initialized, None),
    (types.TEXT_DOCUMENT_DID_OPEN, did_open, None),
    (types.TEXT_DOCUMENT_DID_CHANGE, did_change, None),
    (types.TEXT_DOCUMENT_DID_SAVE, did_save, types.SaveOptions(include_text=False)),
    (types.TEXT_DOCUMENT_DID_CLOSE, did_close, None),
    (types.NOTEBOOK_DOCUMENT_DID_OPEN, did_open_notebook, None),
    (types.NOTEBOOK_DOCUMENT_DID_CHANGE, did_change_notebook, None),
    (types.NOTEBOOK_DOCUMENT_DID_SAVE, did_save_notebook, None),
    (types.NOTEBOOK_DOCUMENT_DID_CLOSE, did_close_notebook, None),
    (types.WORKSPACE_DID_CHANGE_WATCHED_FILES, did_change_watched_files, None),
    (types.WORKSPACE_DID_CHANGE_CONFIGURATION, did_change_configuration, None),
    (
        types.TEXT_DOCUMENT_CODE_ACTION,
        code_action,
        types.CodeActionOptions(code_action_kinds=list(actions.KINDS), resolve_provider=False),
    ),
    (types.TEXT_DOCUMENT_HOVER, hover, None),
    (types.SHUTDOWN, shutdown, None),
]


def create_server() -> JaxfixServer:
    """A server with every feature registered."""
    server = JaxfixServer()
    for name, handler, options in FEATURES:
        server.feature(name, options)(handler)
    return server


def serve() -> None:
    """Run the language server on stdin and stdout until the client says `exit`."""
    create_server().start_io()
