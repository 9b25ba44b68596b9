"""Pausing Python's cycle collector while one file is analysed.

A file's syntax trees and analysis are hundreds of thousands of short-lived objects with no
reference cycles (a test keeps it so); freeing them is reference counting's job. With the
collector running, each of its full passes rescans every live object, so a large file costs
super-linear time (a 5 MB module: 15 s with the collector, 6 s without).

When the last pause ends, what the analysis keeps (the last tree and its analysis, for the
next round or keystroke) joins the oldest generation at once: otherwise the collector's next
young collection would scan all of it (a tenth of the language server's check of a 3,000-line
module) and then again in the middle generation. Cyclic garbage (LibCST's scope analysis
makes some in the files whose rules run) waits for a full collection: the collector's own, or
ours once the pauses have added a quarter of what lived after the last one (CPython's own rule
for its full collections, which objects moved this way do not count towards). A full
collection costs as much as everything alive: in a large process (a test run) one every few
dozen files cost more than the files. Most runs make no cyclic garbage at all (a check of the
benchmark's corpus in one process: 22 full collections freed 30 objects, for a second of CPU),
so a full collection that frees little makes the next one wait twice as long (up to
`MAX_BACKOFF` times), and one that frees much brings the wait back. A full collection found due
when a pause ends runs when the next one begins: a command's last file is not followed by one
(the command leaves with `os._exit`; checking a 1 MB module, that collection was a fifth of the
run), and the language server pays it at its next analysis instead of before it publishes.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_pauses = 0  # blocks inside `paused()` now, in every thread (the language server runs two)
_was_enabled = True
# Objects the pauses left (allocated less freed: the young generation's count, which a pause
# only adds to) since the last full collection, and how many lived after it.
_added = 0
_alive = 0
# The fewest added objects that start a full collection (a few checks of a small file).
FULL_AFTER = 200_000
MAX_BACKOFF = 16
_backoff = 1  # doubled by each full collection that freed under a sixteenth of what was added
_due = False  # a full collection the last pause's end found due, run as the next one begins


@contextmanager
def paused() -> Iterator[None]:
    """No automatic collection inside the block; once no thread is inside one, the collector
    is as it was before the first began."""
    global _pauses, _was_enabled, _added, _due
    with _lock:
        if _pauses == 0:
            _was_enabled = gc.isenabled()
            if _due and _was_enabled:
                _collect()
            gc.disable()
        _pauses += 1
    try:
        yield
    finally:
        with _lock:
            _pauses -= 1
            if _pauses == 0 and _was_enabled:
                _added += gc.get_count()[0]
                _due = _added > max(FULL_AFTER, _alive // 4) * _backoff
                gc.freeze()  # every object tracked now, out of the young generations
                gc.unfreeze()  # and into the oldest
                gc.enable()


def _collect() -> None:
    """A full collection, and what it tells of the next one's wait."""
    global _added, _alive, _backoff, _due
    freed = gc.collect()
    little = freed * 16 < _added
    _backoff = min(MAX_BACKOFF, _backoff * 2) if little else 1
    _added, _due = 0, False
    gc.freeze()
    _alive = gc.get_freeze_count()
    gc.unfreeze()
