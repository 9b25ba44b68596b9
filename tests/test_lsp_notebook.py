"""`jaxfix lsp` on notebook documents: the editor sends a notebook's cells (LSP 3.17's
`notebookDocument/*`), the server analyses them as one text, as `jaxfix check nb.ipynb` does,
and answers per cell. The fixes are judged against `jaxfix apply` on the same notebook."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path

import pytest
import pytest_lsp
from click.testing import CliRunner
from lsprotocol import types

from jaxfix.cli import main as cli_main
from tests.lsp_client import Client, apply, code_actions, diagnostics, server_config, whole

asyncio_module = pytest.mark.asyncio(loop_scope="module")

# Cell 2 caches a jitted function with `functools`, imported in cell 1 (behind a magic line
# that Python cannot parse): the fix removes the decorator in cell 2 and the import, now
# unused, in cell 1. A Markdown cell sits between them; cell 3 has no final newline.
CELLS = [
    "%matplotlib inline\nimport functools\n\nimport jax\n",
    "@functools.lru_cache\n@jax.jit\ndef f(x):\n    return x\n",
    "print(f(1.0))",
]


@pytest_lsp.fixture(config=server_config("-m", "jaxfix.lsp"), scope="module")
async def client(lsp_client: Client) -> AsyncIterator[None]:
    params = types.InitializeParams(capabilities=types.ClientCapabilities())
    await lsp_client.initialize_session(params)
    yield
    await lsp_client.shutdown_session()


def cell_uris(notebook: Path) -> list[str]:
    return [f"vscode-notebook-cell:{notebook}#cell{n}" for n in range(len(CELLS))]


def open_notebook(client: Client, notebook: Path, cells: list[str]) -> list[str]:
    """Open a notebook of `cells` with a Markdown cell after the first; the code cells' URIs."""
    uris = cell_uris(notebook)
    code = [types.NotebookCell(kind=types.NotebookCellKind.Code, document=uri) for uri in uris]
    markdown = types.NotebookCell(kind=types.NotebookCellKind.Markup, document=f"{uris[0]}-md")
    document = types.NotebookDocument(
        uri=notebook.as_uri(),
        notebook_type="jupyter-notebook",
        version=1,
        cells=[code[0], markdown, *code[1:]],
    )
    items = [
        types.TextDocumentItem(uri=uri, language_id="python", version=1, text=text)
        for uri, text in zip(uris, cells, strict=True)
    ]
    client.notebook_document_did_open(
        types.DidOpenNotebookDocumentParams(notebook_document=document, cell_text_documents=items)
    )
    return uris


def edited(
    cells: list[str], uris: list[str], changes: Mapping[str, Sequence[types.TextEdit]]
) -> list[str]:
    """The cells with a workspace edit's changes applied."""
    return [apply(text, changes.get(uri, [])) for uri, text in zip(uris, cells, strict=True)]


def applied_by_cli(tmp_path: Path, cells: list[str]) -> list[str]:
    """The code cells once `jaxfix apply` has fixed a notebook file of them."""
    path = tmp_path / "cli.ipynb"
    notebook = {
        "cells": [{"cell_type": "code", "metadata": {}, "source": text} for text in cells],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    path.write_text(json.dumps(notebook, indent=1))
    result = CliRunner().invoke(cli_main, ["apply", "--no-cache", str(path)])
    assert result.exit_code == 0, result.output
    return [cell["source"] for cell in json.loads(path.read_text())["cells"]]


@asyncio_module
async def test_findings_are_shown_in_their_cell(client: Client, tmp_path: Path) -> None:
    uris = open_notebook(client, tmp_path / "nb.ipynb", CELLS)
    (found,) = await diagnostics(client, uris[1], None)
    assert found.code == "JF102"
    assert found.range.start == types.Position(0, 0)  # the decorator, in its own cell
    assert await diagnostics(client, uris[0], None) == []
    assert await diagnostics(client, uris[2], None) == []

    hover = await client.text_document_hover_async(
        types.HoverParams(types.TextDocumentIdentifier(uri=uris[1]), types.Position(0, 3))
    )
    assert hover is not None and hover.range == found.range
    assert "JF102" in str(hover.contents)

    client.notebook_document_did_close(
        types.DidCloseNotebookDocumentParams(
            notebook_document=types.NotebookDocumentIdentifier((tmp_path / "nb.ipynb").as_uri()),
            cell_text_documents=[types.TextDocumentIdentifier(uri=uri) for uri in uris],
        )
    )
    assert await diagnostics(client, uris[1], None, count=2) == []


@asyncio_module
async def test_a_quick_fix_edits_the_cells_as_apply_does(client: Client, tmp_path: Path) -> None:
    uris = open_notebook(client, tmp_path / "nb.ipynb", CELLS)
    await diagnostics(client, uris[1], None)
    assert await code_actions(client, uris[0], whole(CELLS[0]), ["quickfix"]) == []
    actions = await code_actions(client, uris[1], whole(CELLS[1]), ["quickfix"])
    fix, suppress = actions
    assert fix.title.startswith("jaxfix (JF102)")
    assert suppress.title == "Suppress JF102 on this line"
    assert fix.edit is not None and fix.edit.changes is not None
    assert set(fix.edit.changes) == {uris[0], uris[1]}  # the import is in the first cell
    fixed = edited(CELLS, uris, fix.edit.changes)
    assert fixed == applied_by_cli(tmp_path, CELLS)
    assert fixed[0] == "%matplotlib inline\nimport jax\n"  # the magic line kept as it was

    assert suppress.edit is not None and suppress.edit.changes is not None
    assert set(suppress.edit.changes) == {uris[1]}
    (line, *_) = apply(CELLS[1], suppress.edit.changes[uris[1]]).splitlines()
    assert line == "@functools.lru_cache  # jaxfix: ignore[JF102]"


@asyncio_module
async def test_fix_all_edits_every_cell_it_changes(client: Client, tmp_path: Path) -> None:
    uris = open_notebook(client, tmp_path / "nb.ipynb", CELLS)
    await diagnostics(client, uris[1], None)
    (action,) = await code_actions(client, uris[2], whole(CELLS[2]), ["source.fixAll"])
    assert action.edit is not None and action.edit.changes is not None
    fixed = edited(CELLS, uris, action.edit.changes)
    assert fixed == applied_by_cli(tmp_path, CELLS)
