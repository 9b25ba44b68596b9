"""The worker processes of a run, and what happens when one of them dies.

A run analyses its files in worker processes when they repay it (`jaxfix.run.batch`), and keeps
them for its later rounds across modules. A worker can die under a file: killed for memory on
a huge module, or a crash in C code. The pool is then broken and every task it still held
fails with it, so tasks are sent a few per worker at a time (`IN_FLIGHT`): the tasks a dead
worker may have held are known. The others go on in a fresh pool; the items of those tasks
are done again one at a time in a process of their own, so that the item that kills it is
told apart (with how its process died) and the run goes on with the rest.
"""

from __future__ import annotations

import signal
from collections import deque
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Generic, TypeVar

if TYPE_CHECKING:
    from concurrent.futures import Future, ProcessPoolExecutor
    from multiprocessing.connection import Connection
    from multiprocessing.process import BaseProcess

T = TypeVar("T")
R = TypeVar("R")
# Does the items of a chunk in a worker process: a module-level function (it is pickled).
Work = Callable[[Sequence[T]], list[R]]
# Chunks sent to each worker at a time: the one it works on, and the next (with only one,
# a worker waits for each next chunk: the benchmark's corpus took a tenth longer).
IN_FLIGHT = 2


class Workers:
    """The worker processes of a run, started for the first batch that repays them and kept
    for its later rounds across modules: each imports what its files need (LibCST, a fifth
    of a second) once in the run, not once in each round."""

    def __init__(self) -> None:
        self._pool: ProcessPoolExecutor | None = None
        self._size = 0

    @property
    def size(self) -> int:
        """How many workers are started (0 before the first batch that repays them)."""
        return self._size if self._pool is not None else 0

    def pool(self, count: int) -> ProcessPoolExecutor:
        """A pool of at least `count` workers."""
        if self._pool is None or self._size < count:
            self.close()
            # Only now: the pool imports multiprocessing and pickle (20 ms of a one-file run).
            from concurrent.futures import ProcessPoolExecutor

            self._pool, self._size = ProcessPoolExecutor(max_workers=count), count
        return self._pool

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(cancel_futures=True)
            self._pool = None

    def __enter__(self) -> Workers:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def map_chunks(
        self,
        work: Work[T, R],
        chunks: Sequence[Sequence[T]],
        count: int,
        died: Callable[[T, str], R],
        done: Callable[[int], None] | None = None,
    ) -> list[list[R]]:
        """`work(chunk)` for each of `chunks` on `count` workers, in the order of `chunks`;
        `done` hears how many items each chunk had as it completes. An item whose process
        died under it gets `died(item, how)` (`how`: "died (SIGSEGV)", ...)."""
        from concurrent.futures import FIRST_COMPLETED, wait
        from concurrent.futures.process import BrokenProcessPool

        results: dict[int, list[R]] = {}
        waiting = deque(range(len(chunks)))
        held: list[int] = []  # the chunks of a pool that broke
        running: dict[Future[list[R]], int] = {}

        def finish(future: Future[list[R]]) -> bool:
            """Note a finished chunk; False when its pool broke."""
            n = running.pop(future)
            try:
                results[n] = future.result()
            except BrokenProcessPool:
                held.append(n)
                return False
            if done is not None:
                done(len(results[n]))
            return True

        pool: ProcessPoolExecutor | None = None
        while waiting or running:
            while waiting and len(running) < count * IN_FLIGHT:
                pool = pool or self.pool(count)
                n = waiting.popleft()
                running[pool.submit(work, chunks[n])] = n
            finished, _ = wait(running, return_when=FIRST_COMPLETED)
            if not all([finish(future) for future in finished]):
                for future in list(running):  # they end with the pool: done or broken
                    finish(future)
                self.close()
                pool = None  # the next chunks go to a fresh pool
        if held:
            alone = _Alone(work)
            try:
                for n in sorted(held):
                    results[n] = [alone.do(item, died) for item in chunks[n]]
                    if done is not None:
                        done(len(results[n]))
            finally:
                alone.close()
        return [results[n] for n in range(len(chunks))]


class _Alone(Generic[T, R]):
    """A process of its own that does one item at a time (`work([item])`), started again
    after an item it died under."""

    def __init__(self, work: Work[T, R]) -> None:
        self._work = work
        self._process: BaseProcess | None = None
        self._connection: Connection | None = None

    def do(self, item: T, died: Callable[[T, str], R]) -> R:
        process, connection = self._started()
        try:
            connection.send([item])
            result: list[R] = connection.recv()
        except (EOFError, OSError):  # it died under the item
            connection.close()
            process.join()
            self._process = self._connection = None
            return died(item, how_it_died(process.exitcode))
        return result[0]

    def _started(self) -> tuple[BaseProcess, Connection]:
        if self._process is None or self._connection is None:
            import multiprocessing

            context = multiprocessing.get_context()
            connection, theirs = context.Pipe()
            self._process = context.Process(target=_serve, args=(theirs, self._work), daemon=True)
            self._process.start()
            theirs.close()  # its death then ends our end of the pipe
            self._connection = connection
        return self._process, self._connection

    def close(self) -> None:
        if self._process is not None and self._connection is not None:
            self._connection.send(None)
            self._connection.close()
            self._process.join()


def _serve(connection: Connection, work: Work[Any, Any]) -> None:
    """A `_Alone` process: do each chunk it is sent, until it is sent None."""
    while (chunk := connection.recv()) is not None:
        connection.send(work(chunk))


def how_it_died(exitcode: int | None) -> str:
    """How a process ended, in words, from its exit code (minus a signal's number)."""
    if exitcode is not None and exitcode < 0:
        try:
            name = signal.Signals(-exitcode).name
        except ValueError:
            name = f"signal {-exitcode}"
        if -exitcode == signal.SIGKILL:
            return f"was killed ({name}; out of memory?)"
        return f"died ({name})"
    return f"exited with status {exitcode}"
