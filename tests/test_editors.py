"""The editor set-ups of docs/integration.md work on the editors' versions they name.

Each Neovim snippet (a ```lua block) opens with `-- jaxfix: Neovim X.Y and later`. A static
check, which always runs, holds it to that: it calls no API newer than X.Y except inside an
`if vim.API then` guard (Neovim 0.7, Debian 12's, has neither `vim.fs` nor `vim.lsp.start`).
When Neovim is installed (`nvim` on PATH, or the paths listed in JAXFIX_TEST_NVIM), each
snippet also runs in a headless Neovim of every version it supports, on a project with a
finding: the server must start at the project's root and publish the finding."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.documents import ROOT, fenced, text
from tests.programs import CACHED, CLEAN

PAGE = "docs/integration.md"
HEADER = re.compile(r"-- jaxfix: Neovim (\d+)\.(\d+) and later\n")
# The first Neovim version that has each API (none of them is in 0.7).
NEWER = {
    "vim.fs": (0, 8),
    "vim.lsp.start": (0, 8),
    "vim.uv": (0, 10),
    "vim.iter": (0, 10),
    "vim.system": (0, 10),
    "vim.lsp.get_clients": (0, 10),
    "vim.lsp.config": (0, 11),
    "vim.lsp.enable": (0, 11),
}
API = re.compile(r"\bvim(?:\.\w+)+")
GUARD = re.compile(r"(\s*)if (vim(?:\.\w+)+) then\b")
BRANCH_END = re.compile(r"(\s*)(?:else|elseif|end)\b")


def lua_blocks() -> list[str]:
    return fenced(text(PAGE), "lua")


def version_of(block: str) -> tuple[int, int]:
    header = HEADER.match(block)
    assert header, f"a Neovim snippet must open with `-- jaxfix: Neovim X.Y and later`:\n{block}"
    return int(header[1]), int(header[2])


def first_version(api: str) -> tuple[int, int]:
    """The first version with `api`, or with the API it is an attribute of (`vim.fs.find`)."""
    parts = api.split(".")
    known = [
        NEWER[".".join(parts[:n])] for n in range(2, len(parts) + 1) if ".".join(parts[:n]) in NEWER
    ]
    return max(known, default=(0, 7))


def too_new(block: str) -> list[str]:
    """Each use of an API newer than the snippet's version outside a guard naming it:
    `if vim.lsp.start then ... else ... end` allows 0.8's APIs in its first branch only."""
    least = version_of(block)
    guards: list[tuple[str, tuple[int, int]]] = []  # (indent, version) of the open guards
    found = []
    for number, line in enumerate(block.splitlines(), 1):
        code = line.split("--", 1)[0]
        if guards and (end := BRANCH_END.match(code)) and end[1] == guards[-1][0]:
            guards.pop()
        if guard := GUARD.match(code):
            guards.append((guard[1], max(least, first_version(guard[2]))))
            continue
        allowed = guards[-1][1] if guards else least
        for api in API.findall(code):
            needs = first_version(api)
            if api == "vim.lsp.start" and not re.search(r"\bvim\.lsp\.start\s*\(", code):
                continue  # `vim.lsp.start_client` is 0.7's; a bare `vim.lsp.start` tests for it
            if needs > allowed:
                found.append(f"line {number}: `{api}` needs Neovim {needs[0]}.{needs[1]}")
    return found


def test_docs_have_a_neovim_set_up_for_debian_stable() -> None:
    assert (0, 7) in [version_of(block) for block in lua_blocks()]


@pytest.mark.parametrize("index", range(len(lua_blocks())))
def test_a_neovim_snippet_uses_only_the_api_of_its_version(index: int) -> None:
    assert too_new(lua_blocks()[index]) == []


def test_the_check_finds_what_neovim_0_7_lacks() -> None:
    """The set-up the README had (`vim.fs.find`, `vim.lsp.start` unguarded) fails the check,
    and a guard covers only its own branch."""
    unguarded = (
        "-- jaxfix: Neovim 0.7 and later\n"
        "local marker = vim.fs.find({ 'pyproject.toml' }, { upward = true })[1]\n"
        "vim.lsp.start({ name = 'jaxfix', cmd = { 'jaxfix', 'lsp' } })\n"
    )
    assert too_new(unguarded) == [
        "line 2: `vim.fs.find` needs Neovim 0.8",
        "line 3: `vim.lsp.start` needs Neovim 0.8",
    ]
    guarded = (
        "-- jaxfix: Neovim 0.7 and later\n"
        "if vim.lsp.start then\n"
        "  vim.lsp.start(config)\n"
        "else\n"
        "  vim.lsp.start(config)\n"
        "end\n"
    )
    assert too_new(guarded) == ["line 5: `vim.lsp.start` needs Neovim 0.8"]
    assert too_new(guarded.replace("0.7", "0.8")) == []


def neovims() -> list[str]:
    found = [path for path in os.environ.get("JAXFIX_TEST_NVIM", "").split(os.pathsep) if path]
    on_path = shutil.which("nvim")
    return found + ([on_path] if on_path and on_path not in found else [])


def nvim_version(nvim: str) -> tuple[int, int]:
    first = subprocess.run([nvim, "--version"], capture_output=True, text=True, timeout=30).stdout
    match = re.match(r"NVIM v(\d+)\.(\d+)", first)
    assert match, first
    return int(match[1]), int(match[2])


RUNS = [
    pytest.param(nvim, index, id=f"{nvim}-snippet{index}")
    for nvim in neovims()
    for index in range(len(lua_blocks()))
] or [pytest.param(None, 0, marks=pytest.mark.skip(reason="Neovim is not installed"))]

# Opens the second file, waits for the first's diagnostics, and writes what it found to $OUT.
PROBE = """\
local function clients()
  return (vim.lsp.get_clients or vim.lsp.get_active_clients)()
end
vim.wait(60000, function() return #vim.diagnostic.get(0) > 0 end, 100)
local lines = {}
for _, d in ipairs(vim.diagnostic.get(0)) do
  local at = string.format('%d:%d', d.lnum + 1, d.col + 1)
  table.insert(lines, 'diagnostic ' .. at .. ' ' .. d.source .. ' ' .. d.code)
end
vim.cmd('edit ' .. vim.env.SECOND)
vim.wait(1000, function() return false end, 100)
for _, c in ipairs(clients()) do
  table.insert(lines, 'client ' .. c.name .. ' ' .. c.config.root_dir)
end
vim.fn.writefile(lines, vim.env.OUT)
vim.cmd('qa!')
"""


@pytest.mark.parametrize("nvim, index", RUNS)
@pytest.mark.parametrize("marker", ["pyproject.toml", ".git"])
def test_the_neovim_snippet_starts_jaxfix_at_the_project_root(
    nvim: str, index: int, marker: str, tmp_path: Path
) -> None:
    block = lua_blocks()[index]
    if nvim_version(nvim) < version_of(block):
        pytest.skip(f"the snippet needs Neovim {version_of(block)}")
    project = tmp_path / "project"
    (project / "pkg").mkdir(parents=True)
    if marker == ".git":
        (project / ".git").mkdir()
    else:
        (project / marker).write_text("[tool.jaxfix]\n")
    (project / "pkg" / "model.py").write_text(CACHED)
    (project / "pkg" / "clean.py").write_text(CLEAN)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    jaxfix = bin_dir / "jaxfix"  # `jaxfix` on PATH, as the snippets expect
    jaxfix.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m jaxfix "$@"\n')
    jaxfix.chmod(0o755)
    (tmp_path / "init.lua").write_text(block)
    (tmp_path / "probe.lua").write_text(PROBE)
    home = tmp_path / "home"
    env = {
        **os.environ,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        "PYTHONPATH": str(ROOT),
        "HOME": str(home),
        **{f"XDG_{kind}_HOME": str(home / kind) for kind in ("CONFIG", "DATA", "STATE", "CACHE")},
        "OUT": str(tmp_path / "out.txt"),
        "SECOND": str(project / "pkg" / "clean.py"),
    }
    command = [
        nvim,
        "--headless",
        "-u",
        str(tmp_path / "init.lua"),
        "-c",
        f"luafile {tmp_path / 'probe.lua'}",
    ]
    result = subprocess.run(
        [*command, "model.py"],
        cwd=project / "pkg",
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert (tmp_path / "out.txt").exists(), result.stdout + result.stderr
    lines = (tmp_path / "out.txt").read_text().splitlines()
    assert lines == ["diagnostic 6:1 jaxfix JF102", f"client jaxfix {project}"]
