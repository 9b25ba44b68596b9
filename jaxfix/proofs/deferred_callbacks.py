"""Asynchronous dispatch, modelled on a CPU: host callbacks run late, on another thread.

On a TPU or GPU a jitted call returns before its host callbacks have run: only
`jax.effects_barrier()` (or the end of the program) guarantees that they have. A CPU runs them
before the call returns, which hides a program that reads what a callback wrote too early.
`install` patches jax in the proof runner's process (jaxfix itself never imports jax) so that,
while `Deferral.enabled`, every `jax.debug.callback`, `jax.debug.print` and `io_callback`
without results is queued, and runs, in order, on a thread of its own only when the program
calls `jax.effects_barrier()` or ends (`Deferral.drain`): the latest that asynchronous dispatch
allows, so a race fails every time rather than sometimes.

`jax.pure_callback` and an `io_callback` with results are not deferred: the computation needs
what they return, so they run before it goes on, on every backend.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import numpy as np


class Deferral:
    """The host callbacks a program has started and that have not run yet."""

    def __init__(self) -> None:
        self.enabled = False
        self._pending: list[Callable[[], object]] = []
        self._lock = threading.Lock()

    def later(self, task: Callable[[], object]) -> None:
        with self._lock:
            self._pending.append(task)

    def drain(self) -> None:
        """Run every pending callback, in order, on another thread; raise the first error
        (after the others have run, as the runtime would)."""
        while True:
            with self._lock:
                batch, self._pending = self._pending, []
            if not batch:
                return
            errors: list[BaseException] = []
            worker = threading.Thread(
                target=_run_all, args=(batch, errors), name="jaxfix-deferred-callbacks"
            )
            worker.start()
            worker.join()
            if errors:
                raise errors[0]


def _run_all(tasks: list[Callable[[], object]], errors: list[BaseException]) -> None:
    for task in tasks:
        try:
            task()
        except BaseException as error:  # reported to the program that waits
            errors.append(error)


def install(deferral: Deferral) -> None:
    """Route jax's host callbacks and `effects_barrier` through `deferral`."""
    import jax
    from jax._src import api, callback, debugging

    run_debug: Callable[..., Any] = debugging.debug_callback_p.impl

    def debug_impl(*args: object, **params: object) -> object:
        if not deferral.enabled:
            return run_debug(*args, **params)
        copies = _host_copies(args)
        deferral.later(lambda: run_debug(*copies, **params))
        return ()

    # A jitted program calls the primitive's impl; `jax.debug.print` calls the function.
    debugging.debug_callback_p.def_impl(debug_impl)  # type: ignore[no-untyped-call]
    setattr(debugging, "debug_callback_impl", debug_impl)  # noqa: B010 - patches a module

    run_io: Callable[..., Any] = callback.io_callback_impl

    def io_impl(*args: object, result_avals: object, **params: object) -> object:
        if not deferral.enabled or result_avals:
            return run_io(*args, result_avals=result_avals, **params)
        copies = _host_copies(args)
        deferral.later(lambda: run_io(*copies, result_avals=result_avals, **params))
        return []

    setattr(callback, "io_callback_impl", io_impl)  # noqa: B010

    barrier: Callable[[], None] = api.effects_barrier

    def effects_barrier() -> None:
        barrier()
        deferral.drain()

    setattr(api, "effects_barrier", effects_barrier)  # noqa: B010 - `clear_backends` calls it
    setattr(jax, "effects_barrier", effects_barrier)  # noqa: B010


def _host_copies(args: tuple[object, ...]) -> tuple[object, ...]:
    """The arguments, NumPy arrays copied: the runtime may reuse their buffers once the
    callback returns."""
    return tuple(np.array(a, copy=True) if isinstance(a, np.ndarray) else a for a in args)
