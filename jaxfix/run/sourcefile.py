"""Read and atomically rewrite Python source files without damaging them.

Reading keeps the exact bytes next to the decoded text: the encoding comes from the PEP 263
coding line or a UTF-8 BOM, and line endings are left alone (no universal newlines), so
encoding the unchanged text gives back the original bytes. Writing goes through a temporary
file in the same directory and ``os.replace``, and refuses to clobber a file that changed on
disk after it was read.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import io
import os
import stat
import tempfile
import tokenize
from dataclasses import dataclass
from pathlib import Path

from jaxfix.run.notebook import NOTEBOOK_SUFFIX, Notebook, NotebookError, parse_notebook

__all__ = ["SourceError", "SourceFile", "read_source", "read_stdin_source", "write_source_atomic"]

_ERRNO_MESSAGES = {
    errno.ENOENT: "no such file or directory",
    errno.ELOOP: "symlink loop",
    errno.EACCES: "permission denied",
    errno.EPERM: "permission denied",
    errno.EISDIR: "is a directory",
    errno.ENOSPC: "no space left on device",
    errno.EROFS: "read-only file system",
}


class SourceError(Exception):
    """A source file that cannot be read or written; ``message`` is one line, ``position``
    the 1-based line and column of the problem when it has one."""

    def __init__(self, path: Path, message: str, position: tuple[int, int] | None = None) -> None:
        where = f"{path}:{position[0]}:{position[1]}" if position else str(path)
        super().__init__(f"{where}: {message}")
        self.path = path
        self.message = message
        self.position = position


@dataclass(frozen=True)
class SourceFile:
    """A source file's exact bytes, its decoded text and the encoding that links them."""

    path: Path
    raw: bytes
    text: str
    encoding: str
    # A Jupyter notebook's: then `raw` is its JSON and `text` the Python of its code cells
    # (`jaxfix.run.notebook`), and what is written back is the notebook with that Python.
    notebook: Notebook | None = None

    def rendered(self, text: str) -> str:
        """What the file holds once its text is `text`: the text, or a notebook's JSON."""
        return text if self.notebook is None else self.notebook.render(text)


def read_source(path: Path) -> SourceFile:
    """Read and decode ``path``; raise SourceError if it is not a readable text source file."""
    path = Path(path)
    try:
        st = os.stat(path)
        if stat.S_ISDIR(st.st_mode):
            raise SourceError(path, "is a directory")
        if not stat.S_ISREG(st.st_mode):
            raise SourceError(path, "not a regular file")
        raw = path.read_bytes()
    except OSError as exc:
        raise SourceError(path, _os_message(exc)) from exc
    return _notebook_or_source(_decode(path, raw))


def read_stdin_source(data: bytes, display_name: str = "-") -> SourceFile:
    """Decode source text that arrived on stdin, reporting problems under ``display_name``."""
    return _notebook_or_source(_decode(Path(display_name), data))


def _notebook_or_source(source: SourceFile) -> SourceFile:
    """A `.ipynb` file read as the Python of its code cells; any other file as it is."""
    if source.path.suffix != NOTEBOOK_SUFFIX:
        return source
    try:
        notebook = parse_notebook(source.text)
    except NotebookError as exc:
        raise SourceError(source.path, str(exc)) from exc
    return dataclasses.replace(source, text=notebook.python, notebook=notebook)


def write_source_atomic(source: SourceFile, new_text: str) -> None:
    """Replace ``source.path`` with ``new_text`` (in ``source.encoding``) in one atomic step.

    The file is only replaced if its bytes are still ``source.raw``; its permission bits (and,
    where allowed, its owner) are kept. A symlink is not replaced: its target is, so the link
    survives. On failure the original is untouched and no temporary file is left behind.
    """
    data = _encode(source, source.rendered(new_text))
    target = Path(os.path.realpath(source.path))
    try:
        st = os.stat(target)
        fd, tmp_name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    except OSError as exc:
        raise SourceError(source.path, f"cannot write: {_os_message(exc)}") from exc
    try:
        _fill_temp(fd, data, st)
        _check_unchanged(source, target)
        os.replace(tmp_name, target)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp_name)
        if isinstance(exc, OSError):
            raise SourceError(source.path, f"cannot write: {_os_message(exc)}") from exc
        raise
    _fsync_dir(target.parent)


def _decode(path: Path, raw: bytes) -> SourceFile:
    """Decode ``raw`` exactly as Python would read it, keeping every byte recoverable."""
    if b"\x00" in raw:
        raise SourceError(path, "contains NUL bytes")
    encoding = _detect_encoding(path, raw)
    try:
        text = raw.decode(encoding)
    except UnicodeDecodeError as exc:
        bad = raw[exc.start : exc.start + 1].hex()
        line = raw.count(b"\n", 0, exc.start) + 1
        column = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1) + 1  # 1-based, in bytes
        raise SourceError(
            path, f"cannot decode as {encoding}: invalid byte 0x{bad}", (line, column)
        ) from exc
    except LookupError as exc:
        raise SourceError(path, f"unusable encoding: {encoding}") from exc
    if text.encode(encoding) != raw:
        raise SourceError(path, f"does not round-trip through {encoding}")
    return SourceFile(path, raw, text, encoding)


def _detect_encoding(path: Path, raw: bytes) -> str:
    """Apply PEP 263 and BOM rules; a BOM gives ``utf-8-sig`` so the BOM is kept out of text."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(raw).readline)
    except SyntaxError as exc:
        if exc.msg == "invalid or missing encoding declaration":
            return "utf-8"  # undecodable first lines: let the decoder report the exact position
        raise SourceError(path, " ".join(str(exc.msg).split())) from exc
    return encoding


def _encode(source: SourceFile, new_text: str) -> bytes:
    """Encode ``new_text`` with the file's own encoding, or explain why it cannot be."""
    try:
        return new_text.encode(source.encoding)
    except UnicodeEncodeError as exc:
        char = new_text[exc.start]
        raise SourceError(
            source.path,
            f"cannot encode as {source.encoding}: {char!r} at offset {exc.start}",
        ) from exc
    except LookupError as exc:
        raise SourceError(source.path, f"unusable encoding: {source.encoding}") from exc


def _fill_temp(fd: int, data: bytes, original: os.stat_result) -> None:
    """Write ``data`` to the temporary file, give it the original's metadata, sync and close."""
    with open(fd, "wb", closefd=True) as handle:
        handle.write(data)
        handle.flush()
        if (original.st_uid, original.st_gid) != _owner(fd):
            with contextlib.suppress(OSError):  # only privileged users may give files away
                os.fchown(fd, original.st_uid, original.st_gid)
        os.fchmod(fd, stat.S_IMODE(original.st_mode))  # after chown, which clears setuid bits
        os.fsync(fd)


def _owner(fd: int) -> tuple[int, int]:
    """Return the (uid, gid) of an open file."""
    st = os.fstat(fd)
    return st.st_uid, st.st_gid


def _check_unchanged(source: SourceFile, target: Path) -> None:
    """Refuse to replace a file whose bytes are no longer the ones that were read."""
    try:
        current = target.read_bytes()
    except FileNotFoundError:
        current = None
    if current != source.raw:
        raise SourceError(source.path, "changed on disk since it was read")


def _fsync_dir(directory: Path) -> None:
    """Make the rename durable; best effort, as some platforms cannot fsync directories."""
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _os_message(exc: OSError) -> str:
    """Turn an OSError into a short one-line lowercase message."""
    if exc.errno in _ERRNO_MESSAGES:
        return _ERRNO_MESSAGES[exc.errno]
    text = exc.strerror or str(exc) or type(exc).__name__
    return " ".join(text.lower().split())
