"""What the terminal gets: color and a progress bar on a terminal, plain text otherwise.

Color and the progress bar need a terminal and no `NO_COLOR` (https://no-color.org); the
progress bar (rich, on stderr) appears only for runs long enough to need one, and disappears
when the run ends.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING, TextIO, TypeVar

import click

if TYPE_CHECKING:
    from rich.progress import Progress

T = TypeVar("T")
# A run over fewer files than this finishes before a bar would help.
PROGRESS_MIN_FILES = 20
_active: Progress | None = None  # the progress bar on screen


def wants_color(stream: TextIO) -> bool:
    """Color only on a terminal, and never when NO_COLOR is set (to anything but "")."""
    return not os.environ.get("NO_COLOR") and _isatty(stream)


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def with_progress(items: Iterator[T], total: int, description: str) -> Iterator[T]:
    """`items`, with a transient progress bar on stderr when it is a color terminal; while it
    shows, `echo` prints above it."""
    global _active
    if total < PROGRESS_MIN_FILES or not wants_color(sys.stderr):
        yield from items
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

    columns = (
        "[progress.description]{task.description}",
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
    )
    console = Console(stderr=True)
    progress = Progress(
        *columns, console=console, transient=True, redirect_stdout=False, redirect_stderr=False
    )
    with progress:
        _active = progress
        try:
            task = progress.add_task(description, total=total)
            for item in items:
                yield item
                progress.advance(task)
        finally:
            _active = None


def echo(text: str, *, err: bool = False, nl: bool = True) -> None:
    """`click.echo` to stdout (or stderr), printed above the progress bar while one shows."""
    stream = sys.stderr if err else sys.stdout
    if _active is not None and _isatty(stream):
        from rich.text import Text

        block = text + "\n" if nl else text
        _active.console.print(Text.from_ansi(block, end=""), end="", soft_wrap=True)
        return
    click.echo(text, err=err, nl=nl)
