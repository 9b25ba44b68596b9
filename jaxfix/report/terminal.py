"""What the terminal gets: color and a progress bar on a terminal, plain text otherwise.

Color and the progress bar need a terminal and no `NO_COLOR` (https://no-color.org); the
progress bar (rich, on stderr) appears only for runs long enough to need one, and disappears
when the run ends.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING, TextIO

import click

if TYPE_CHECKING:
    from rich.progress import Progress

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


class ProgressBar:
    """The bar of one run: `more` adds files to analyse (a round of tracing across modules
    analyses some again), `done` counts files analysed; each change is drawn at once."""

    def __init__(self, progress: Progress, description: str) -> None:
        self._progress = progress
        self._task = progress.add_task(description, total=0, visible=False)
        self._total = 0

    def more(self, count: int) -> None:
        self._total += count
        self._progress.update(self._task, total=self._total, visible=True, refresh=True)

    def done(self, count: int = 1) -> None:
        self._progress.update(self._task, advance=count, refresh=True)


@contextlib.contextmanager
def progress_bar(files: int, description: str) -> Iterator[ProgressBar | None]:
    """A transient progress bar on stderr when it is a color terminal and the run has enough
    files to need one (else None); while it shows, `echo` prints above it."""
    global _active
    if files < PROGRESS_MIN_FILES or not wants_color(sys.stderr):
        yield None
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
            yield ProgressBar(progress, description)
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
