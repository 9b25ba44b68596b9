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
one every `FULL_EVERY` pauses.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_pauses = 0  # blocks inside `paused()` now, in every thread (the language server runs two)
_was_enabled = True
_ended = 0  # pauses ended so far
# A full collection every this many pauses: LibCST's scope analysis (in the files whose rules
# run) leaves reference cycles, which would otherwise wait for the collector's rare full passes.
FULL_EVERY = 64


@contextmanager
def paused() -> Iterator[None]:
    """No automatic collection inside the block; once no thread is inside one, the collector
    is as it was before the first began."""
    global _pauses, _was_enabled, _ended
    with _lock:
        if _pauses == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _pauses += 1
    try:
        yield
    finally:
        with _lock:
            _pauses -= 1
            if _pauses == 0 and _was_enabled:
                _ended += 1
                if _ended % FULL_EVERY == 0:
                    gc.collect()
                gc.freeze()  # every object tracked now, out of the young generations
                gc.unfreeze()  # and into the oldest
                gc.enable()
