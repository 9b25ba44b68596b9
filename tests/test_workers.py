"""The run's worker processes: a process that dies under an item costs that item only."""

from __future__ import annotations

import os
import signal
from collections.abc import Sequence

from jaxfix.run.workers import Workers, how_it_died

FATAL = {5: signal.SIGKILL, 8: signal.SIGTERM}


def squares_unless_fatal(chunk: Sequence[int]) -> list[int | str]:
    """Each item squared, in a worker process; the process dies on a fatal item."""
    for item in chunk:
        if item in FATAL:
            os.kill(os.getpid(), FATAL[item])
    return [item * item for item in chunk]


def died(item: int, how: str) -> str:
    return f"{item} {how}"


def test_only_the_items_a_process_dies_under_are_lost_and_the_rest_go_on() -> None:
    chunks = [[1, 2, 3], [4, 5, 6], [7, 8, 9], [10]]
    heard: list[int] = []
    with Workers() as workers:
        results = workers.map_chunks(squares_unless_fatal, chunks, 2, died, heard.append)
        assert results == [
            [1, 4, 9],
            [16, "5 was killed (SIGKILL; out of memory?)", 36],
            [49, "8 died (SIGTERM)", 81],
            [100],
        ]
        assert sorted(heard) == [1, 3, 3, 3]  # each chunk once, with its items
        # The broken pool is gone: the next batch of the run gets a working one.
        assert workers.map_chunks(squares_unless_fatal, [[2], [3]], 2, died) == [[4], [9]]


def test_how_a_process_ended_in_words() -> None:
    assert how_it_died(-signal.SIGSEGV) == "died (SIGSEGV)"
    assert how_it_died(-signal.SIGKILL) == "was killed (SIGKILL; out of memory?)"
    assert how_it_died(3) == "exited with status 3"
