"""What each file holds, by digest, without reading the files that have not changed: a file's
digest is trusted while its size and mtime stay those it had when it was read (as Ruff and
git do), and read and hashed again only when they differ. A file touched but left as it was
is hashed once, found unchanged, and trusted again from then on."""

from __future__ import annotations

import hashlib
import os
import time
from typing import Any

# A file written this recently may be written again within the clock's granularity without
# its mtime moving (git's "racily clean" files): its size and mtime are not trusted until it is
# older (2 s: FAT's granularity, the coarsest in use).
RACY_NS = 2_000_000_000
UNTRUSTED = -1  # the mtime noted for a file too recent to trust


def digest(data: bytes) -> str:
    """The digest of a file's bytes (or any key) that the cache compares."""
    return hashlib.blake2b(data, digest_size=16).hexdigest()


class Stamps:
    """The digest of each file's content, by absolute path: those noted by earlier runs as
    `[size, mtime_ns, digest]`, and those found by this one (each file examined once a run)."""

    def __init__(self, known: dict[str, Any]) -> None:
        self.known = known
        self.changed = False
        self._now: dict[str, str | None] = {}

    def digest(self, path: str) -> str | None:
        """The digest of the file's content now; None when it cannot be read."""
        if path not in self._now:
            self._now[path] = self._examine(path)
        return self._now[path]

    def _examine(self, path: str) -> str | None:
        noted = self.known.get(path)
        try:
            stat = os.stat(path)
            known = _noted_digest(noted, stat)
            if known is not None:
                return known
            with open(path, "rb") as handle:  # after the stat: a later write moves the mtime
                content = digest(handle.read())
        except OSError:
            if self.known.pop(path, None) is not None:  # gone: forget it
                self.changed = True
            return None
        trusted = time.time_ns() - stat.st_mtime_ns > RACY_NS
        mtime = stat.st_mtime_ns if trusted else UNTRUSTED
        self.known[path] = [stat.st_size, mtime, content]
        self.changed = True
        return content


def _noted_digest(noted: Any, stat: os.stat_result) -> str | None:
    """The digest an earlier run noted for the file at this size and mtime, if any (a foreign
    value never matches)."""
    if isinstance(noted, list) and len(noted) == 3 and isinstance(noted[2], str):
        return noted[2] if noted[:2] == [stat.st_size, stat.st_mtime_ns] else None
    return None
