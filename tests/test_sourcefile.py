"""Tests for jaxfix.run.sourcefile: reading and rewriting must never damage a file."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from jaxfix.run.sourcefile import (
    SourceError,
    SourceFile,
    read_source,
    read_stdin_source,
    write_source_atomic,
)


def make(tmp_path: Path, raw: bytes, name: str = "mod.py") -> Path:
    """Write ``raw`` to a file under ``tmp_path`` and return its path."""
    path = tmp_path / name
    path.write_bytes(raw)
    return path


def round_trip(path: Path) -> bytes:
    """Read ``path``, write its text back unchanged and return the resulting bytes."""
    source = read_source(path)
    write_source_atomic(source, source.text)
    return path.read_bytes()


def leftovers(directory: Path, *keep: str) -> list[str]:
    """Return the names in ``directory`` other than ``keep`` (e.g. stray temporary files)."""
    return sorted(name for name in os.listdir(directory) if name not in keep)


def test_plain_utf8(tmp_path: Path) -> None:
    path = make(tmp_path, "x = 'é'\n".encode())
    source = read_source(path)
    assert source == SourceFile(path, "x = 'é'\n".encode(), "x = 'é'\n", "utf-8")


def test_bom_round_trip(tmp_path: Path) -> None:
    raw = b"\xef\xbb\xbfx = '\xc3\xa9'\n"
    path = make(tmp_path, raw)
    source = read_source(path)
    assert source.encoding == "utf-8-sig"
    assert source.text == "x = 'é'\n"
    write_source_atomic(source, source.text.replace("x", "y"))
    assert path.read_bytes() == b"\xef\xbb\xbfy = '\xc3\xa9'\n"


def test_latin1_coding_line_round_trip(tmp_path: Path) -> None:
    raw = b"# -*- coding: latin-1 -*-\nname = '\xe9t\xe9'\n"
    path = make(tmp_path, raw)
    source = read_source(path)
    assert source.encoding == "iso-8859-1"
    assert source.text == "# -*- coding: latin-1 -*-\nname = 'été'\n"
    assert round_trip(path) == raw
    write_source_atomic(read_source(path), source.text.replace("été", "ça"))
    assert path.read_bytes() == b"# -*- coding: latin-1 -*-\nname = '\xe7a'\n"


def test_unencodable_new_text_is_refused(tmp_path: Path) -> None:
    raw = b"# coding: latin-1\nx = 1\n"
    path = make(tmp_path, raw)
    with pytest.raises(SourceError, match="cannot encode as iso-8859-1"):
        write_source_atomic(read_source(path), "# coding: latin-1\nx = '\u20ac'\n")
    assert path.read_bytes() == raw
    assert leftovers(tmp_path, "mod.py") == []


@pytest.mark.parametrize(
    "raw",
    [
        b"a = 1\r\nb = 2\r\n",
        b"a = 1\r\nb = 2\nc = 3\rd = 4\r\n",
        b"a = 1\nb = 2",
        b"a = 1\r\n\r\n",
        b"",
    ],
    ids=["crlf", "mixed", "no-trailing-newline", "crlf-blank", "empty"],
)
def test_line_endings_preserved_byte_for_byte(tmp_path: Path, raw: bytes) -> None:
    path = make(tmp_path, raw)
    source = read_source(path)
    assert source.text.encode() == raw
    assert round_trip(path) == raw


def test_crlf_survives_an_edit(tmp_path: Path) -> None:
    path = make(tmp_path, b"a = 1\r\nb = 2\r\n")
    source = read_source(path)
    write_source_atomic(source, source.text.replace("a = 1", "a = 10"))
    assert path.read_bytes() == b"a = 10\r\nb = 2\r\n"


def test_nul_bytes(tmp_path: Path) -> None:
    path = make(tmp_path, b"x = 1\x00\n")
    with pytest.raises(SourceError) as info:
        read_source(path)
    assert info.value.path == path
    assert info.value.message == "contains NUL bytes"
    assert str(info.value) == f"{path}: contains NUL bytes"


def test_undecodable_bytes_name_encoding_and_position(tmp_path: Path) -> None:
    path = make(tmp_path, b"x = 1\ny = '\xff'\n")
    with pytest.raises(SourceError) as info:
        read_source(path)
    assert info.value.message == "cannot decode as utf-8: invalid byte 0xff"
    assert str(info.value) == f"{path}:2:6: cannot decode as utf-8: invalid byte 0xff"


def test_undecodable_first_line(tmp_path: Path) -> None:
    path = make(tmp_path, b"\xfe = 1\n")
    with pytest.raises(SourceError, match=r"cannot decode as utf-8: invalid byte 0xfe$") as info:
        read_source(path)
    assert info.value.position == (1, 1)


def test_unknown_coding_line(tmp_path: Path) -> None:
    path = make(tmp_path, b"# coding: klingon\nx = 1\n")
    with pytest.raises(SourceError, match="unknown encoding: klingon"):
        read_source(path)


def test_bom_conflicting_with_coding_line(tmp_path: Path) -> None:
    path = make(tmp_path, b"\xef\xbb\xbf# coding: latin-1\nx = 1\n")
    with pytest.raises(SourceError, match="encoding problem"):
        read_source(path)


def test_directory_is_refused(tmp_path: Path) -> None:
    (tmp_path / "pkg.py").mkdir()
    with pytest.raises(SourceError) as info:
        read_source(tmp_path / "pkg.py")
    assert info.value.message == "is a directory"


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(SourceError) as info:
        read_source(tmp_path / "gone.py")
    assert info.value.message == "no such file or directory"


def test_unreadable_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = make(tmp_path, b"x = 1\n")

    def deny(self: Path) -> bytes:
        """Behave like a file we may not read (root ignores chmod, so fake it)."""
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(Path, "read_bytes", deny)
    with pytest.raises(SourceError) as info:
        read_source(path)
    assert info.value.message == "permission denied"


@pytest.mark.parametrize("mode", [0o640, 0o755, 0o600])
def test_permissions_kept(tmp_path: Path, mode: int) -> None:
    path = make(tmp_path, b"x = 1\n")
    path.chmod(mode)
    write_source_atomic(read_source(path), "x = 2\n")
    assert path.read_bytes() == b"x = 2\n"
    assert stat.S_IMODE(path.stat().st_mode) == mode


def test_changed_on_disk_is_refused_and_untouched(tmp_path: Path) -> None:
    path = make(tmp_path, b"x = 1\n")
    source = read_source(path)
    path.write_bytes(b"x = 'edited elsewhere'\n")
    with pytest.raises(SourceError) as info:
        write_source_atomic(source, "x = 2\n")
    assert info.value.message == "changed on disk since it was read"
    assert path.read_bytes() == b"x = 'edited elsewhere'\n"
    assert leftovers(tmp_path, "mod.py") == []


def test_deleted_since_read_is_refused(tmp_path: Path) -> None:
    path = make(tmp_path, b"x = 1\n")
    source = read_source(path)
    path.unlink()
    with pytest.raises(SourceError):
        write_source_atomic(source, "x = 2\n")
    assert leftovers(tmp_path) == []


def test_symlink_target_replaced_and_link_kept(tmp_path: Path) -> None:
    real_dir = tmp_path / "real"
    real_dir.mkdir()
    target = make(real_dir, b"x = 1\n", "target.py")
    target.chmod(0o640)
    link = tmp_path / "link.py"
    link.symlink_to(target)
    write_source_atomic(read_source(link), "x = 2\n")
    assert link.is_symlink()
    assert os.readlink(link) == str(target)
    assert target.read_bytes() == b"x = 2\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert leftovers(tmp_path, "link.py", "real") == []
    assert leftovers(real_dir, "target.py") == []


def test_failed_replace_leaves_original_and_no_temp(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    raw = b"x = 1\r\n"
    path = make(tmp_path, raw)
    source = read_source(path)

    def fail(src: str, dst: str) -> None:
        """Simulate the rename failing (chmod cannot force this when running as root)."""
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", fail)
    with pytest.raises(SourceError) as info:
        write_source_atomic(source, "x = 2\r\n")
    assert info.value.message == "cannot write: no space left on device"
    assert path.read_bytes() == raw
    assert leftovers(tmp_path, "mod.py") == []


def test_failed_write_leaves_original_and_no_temp(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = make(tmp_path, b"x = 1\n")
    source = read_source(path)

    def fail(fd: int) -> None:
        """Simulate an I/O error while flushing the temporary file to disk."""
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(os, "fsync", fail)
    with pytest.raises(SourceError, match="cannot write: input/output error"):
        write_source_atomic(source, "x = 2\n")
    assert path.read_bytes() == b"x = 1\n"
    assert leftovers(tmp_path, "mod.py") == []


def test_interrupt_still_cleans_up(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = make(tmp_path, b"x = 1\n")
    source = read_source(path)

    def interrupt(src: str, dst: str) -> None:
        """Simulate Ctrl-C arriving just before the rename."""
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "replace", interrupt)
    with pytest.raises(KeyboardInterrupt):
        write_source_atomic(source, "x = 2\n")
    assert path.read_bytes() == b"x = 1\n"
    assert leftovers(tmp_path, "mod.py") == []


def test_stdin_source_decodes_the_same_way() -> None:
    source = read_stdin_source(b"\xef\xbb\xbfa = 1\r\n")
    assert source == SourceFile(Path("-"), b"\xef\xbb\xbfa = 1\r\n", "a = 1\r\n", "utf-8-sig")
    named = read_stdin_source(b"# coding: latin-1\nx = '\xe9'\n", "<stdin>")
    assert named.text == "# coding: latin-1\nx = 'é'\n"


def test_stdin_source_errors_use_display_name() -> None:
    with pytest.raises(SourceError) as info:
        read_stdin_source(b"\x00", "input.py")
    assert str(info.value) == "input.py: contains NUL bytes"
