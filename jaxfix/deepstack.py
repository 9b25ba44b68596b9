"""Run the analysis of one file on a thread with a deep stack.

LibCST's parser and visitors recurse once per nesting level of the code. On the main thread's
8 MiB stack a deeply nested (but valid) expression can overflow the C stack and kill the process
with no message, losing every other file's results. A thread with a large stack and a high
recursion limit analyses whatever CPython itself accepts; the stack is virtual memory, so only
the pages a deep file really touches are ever committed.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

STACK_BYTES = 1024 * 1024 * 1024
RECURSION_LIMIT = 60_000  # CPython's parser rejects nesting deeper than a few thousand levels

_stack_lock = threading.Lock()


def call_with_deep_stack(function: Callable[[], T]) -> T:
    """`function()`, run on a fresh thread with a deep stack; its exception is re-raised here."""
    outcome: list[T] = []
    failure: list[BaseException] = []

    def target() -> None:
        try:
            outcome.append(function())
        except BaseException as error:  # handed to the calling thread, which re-raises it
            failure.append(error)

    if sys.getrecursionlimit() < RECURSION_LIMIT:
        sys.setrecursionlimit(RECURSION_LIMIT)
    with _stack_lock:  # the stack size is process-wide: set it only around our own thread
        previous = threading.stack_size(STACK_BYTES)
        try:
            thread = threading.Thread(target=target, name="jaxfix-analysis", daemon=True)
            thread.start()
        finally:
            threading.stack_size(previous)
    thread.join()
    if failure:
        raise failure[0]
    return outcome[0]
