"""Run the analysis of one file on a thread with a deep stack.

LibCST's parser and visitors recurse once per nesting level of the code. On the main thread's
8 MiB stack a deeply nested (but valid) expression can overflow the C stack and kill the process
with no message, losing every other file's results. A thread with a large stack and a high
recursion limit analyses whatever CPython itself accepts; the stack is virtual memory, so only
the pages a deep file really touches are ever committed.

One such thread per process does every analysis, one at a time: what the analysis keeps for
the next analysis of the same file (`jaxfix.analysis.flow.analyse`) is kept per thread, and a
file that other modules trace is analysed once per round of tracing across modules.
"""

from __future__ import annotations

import os
import queue
import sys
import threading
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

STACK_BYTES = 1024 * 1024 * 1024
RECURSION_LIMIT = 60_000  # CPython's parser rejects nesting deeper than a few thousand levels

_Task = tuple[Callable[[], Any], list[Any], list[BaseException], threading.Event]
_stack_lock = threading.Lock()
_worker: tuple[int, threading.Thread, queue.SimpleQueue[_Task]] | None = None


def call_with_deep_stack(function: Callable[[], T]) -> T:
    """`function()`, run on the process' deep-stack thread; its exception is re-raised here."""
    tasks = _tasks()
    if tasks is None:  # already on it (a nested call)
        return function()
    outcome: list[T] = []
    failure: list[BaseException] = []
    done = threading.Event()
    tasks.put((function, outcome, failure, done))
    done.wait()
    if failure:
        raise failure[0]
    return outcome[0]


def _tasks() -> queue.SimpleQueue[_Task] | None:
    """The queue of this process' deep-stack thread, started on first use (and again in a
    forked child, which has none running); None on that thread itself."""
    global _worker
    with _stack_lock:
        worker = _worker
        if worker is None or worker[0] != os.getpid() or not worker[1].is_alive():
            if sys.getrecursionlimit() < RECURSION_LIMIT:
                sys.setrecursionlimit(RECURSION_LIMIT)
            tasks: queue.SimpleQueue[_Task] = queue.SimpleQueue()
            previous = threading.stack_size(STACK_BYTES)  # process-wide: only for this thread
            try:
                thread = threading.Thread(
                    target=_serve, args=(tasks,), name="jaxfix-analysis", daemon=True
                )
                thread.start()
            finally:
                threading.stack_size(previous)
            worker = _worker = (os.getpid(), thread, tasks)
    return None if threading.current_thread() is worker[1] else worker[2]


def _serve(tasks: queue.SimpleQueue[_Task]) -> None:
    while True:
        function, outcome, failure, done = tasks.get()
        try:
            outcome.append(function())
        except BaseException as error:  # handed to the calling thread, which re-raises it
            failure.append(error)
        finally:
            done.set()
