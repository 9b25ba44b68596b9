"""The `jaxfix` command: the CLI, then an exit that does not free the heap object by object.

A run holds the syntax trees and analyses of the last files it analysed: freeing them one by
one at interpreter exit took a third of a second of a one-file-edit run (2 s). Like mypy's
`util.hard_exit`, the command flushes its output and leaves with `os._exit`: when `main`
returns, everything that must happen has happened (the cache written, worker pools shut down,
the language server stopped). Tests call `jaxfix.cli.main`, which returns normally.
"""

from __future__ import annotations

import contextlib
import os
import sys
from typing import NoReturn

from jaxfix.cli import main


def run() -> NoReturn:
    """Run the CLI and exit with its status, skipping the interpreter's teardown."""
    try:
        main()
        code = 0
    except SystemExit as done:  # click ends every command with one
        code = exit_status(done.code)
    for stream in (sys.stdout, sys.stderr):
        # A reader that went away (`jaxfix check | head`) has all it wanted.
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(code)


def exit_status(code: object) -> int:
    """The process status `SystemExit(code)` gives: None is 0, a message is printed and 1."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1
