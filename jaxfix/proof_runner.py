"""Run Python programs under jax in this one interpreter (jax is imported once) and print, as
JSON, what each printed and raised: the subprocess behind `jaxfix.proofs.run_programs`.

    python -m jaxfix.proof_runner WORKDIR MODE:PROGRAM [MODE:PROGRAM ...]

MODE says how the program's host callbacks run: `synchronous`, as a CPU runs them (before the
jitted call returns), or `deferred`, as an accelerator may (at the next `jax.effects_barrier()`
or the program's end: `jaxfix.deferred_callbacks`). Each program runs as __main__ in its own
empty working directory below WORKDIR. Many programs share the interpreter (a rule's fixtures,
or a whole test batch), so what a program may change for the next one is put back after it
(`isolated`): the working directory, the warning filters and the root logger (a fixture's
`logging.basicConfig(stream=sys.stdout, force=True)` would otherwise send the next programs' log
records to its own, finished, captured stdout).
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import os
import runpy
import sys
import traceback
import warnings
from collections.abc import Iterator
from pathlib import Path

MODES = ("synchronous", "deferred")


@contextlib.contextmanager
def isolated(workdir: Path) -> Iterator[None]:
    """Run the body in `workdir`, then restore the process state a program may change."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    previous = os.getcwd()
    os.chdir(workdir)
    try:
        with warnings.catch_warnings():
            yield
    finally:
        os.chdir(previous)
        root.handlers[:] = handlers
        root.setLevel(level)


def run_one(program: Path, workdir: Path) -> dict[str, object]:
    import jax  # only this subprocess imports jax, never jaxfix itself

    workdir.mkdir(parents=True)
    buffer = io.StringIO()
    error: tuple[str, str] | None = None
    with isolated(workdir), contextlib.redirect_stdout(buffer):
        try:
            runpy.run_path(str(program), run_name="__main__")
            jax.effects_barrier()  # type: ignore[no-untyped-call]  # the program's end
        except BaseException as exc:  # the program's failure is the result
            error = (type(exc).__name__, f"{exc}\n{traceback.format_exc(limit=3)}")
            with contextlib.suppress(BaseException):  # nothing is left for the next program
                jax.effects_barrier()  # type: ignore[no-untyped-call]
    return {"stdout": buffer.getvalue(), "error": error}


def main(argv: list[str]) -> None:
    from jaxfix.deferred_callbacks import Deferral, install

    workdir = Path(argv[0])
    deferral = Deferral()
    install(deferral)
    results = []
    for index, argument in enumerate(argv[1:]):
        mode, _, program = argument.partition(":")
        if mode not in MODES:
            sys.exit(f"error: {argument!r} is not MODE:PROGRAM with MODE one of {MODES}")
        deferral.enabled = mode == "deferred"
        results.append(run_one(Path(program).resolve(), workdir / str(index)))
    sys.stdout.write(json.dumps(results))


if __name__ == "__main__":
    main(sys.argv[1:])
