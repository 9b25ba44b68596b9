"""The proof runner's two ways of running host callbacks: at once (a CPU) or deferred to the
next `jax.effects_barrier()` (what an accelerator's asynchronous dispatch allows); and the
comparison of printed numbers within a backend's precision."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from jaxfix.proofs import Callbacks, Run, run_programs, same_output

CALLBACKS = textwrap.dedent("""\
    import jax
    import jax.numpy as jnp
    from jax.experimental import io_callback

    SEEN = []


    @jax.jit
    def f(x):
        jax.debug.callback(lambda v: SEEN.append("debug"), x, ordered=True)
        io_callback(lambda v: SEEN.append("io"), None, x, ordered=True)
        jax.debug.print("print {}", x.sum())
        y = jax.pure_callback(lambda v: (SEEN.append("pure"), v * 2)[1], x, x)
        return y


    out = f(jnp.ones(2))
    print("after the call:", sorted(SEEN), out.tolist())
    jax.effects_barrier()
    print("after the barrier:", sorted(SEEN))
    """)


@pytest.mark.jax
def test_callbacks_run_at_once_or_at_the_next_barrier(tmp_path: Path) -> None:
    program = tmp_path / "callbacks.py"
    program.write_text(CALLBACKS)
    at_once, deferred = run_programs(
        [program, program], callbacks=[Callbacks.SYNCHRONOUS, Callbacks.DEFERRED]
    )
    assert at_once.error is None and deferred.error is None
    assert at_once.stdout == (
        "print 2.0\n"
        "after the call: ['debug', 'io', 'pure'] [2.0, 2.0]\n"
        "after the barrier: ['debug', 'io', 'pure']\n"
    )
    # A pure callback's result is needed at once; the others wait for the barrier.
    assert deferred.stdout == (
        "after the call: ['pure'] [2.0, 2.0]\n"
        "print 2.0\n"
        "after the barrier: ['debug', 'io', 'pure']\n"
    )


@pytest.mark.jax
def test_deferred_callbacks_run_at_the_end_and_their_errors_fail_the_program(
    tmp_path: Path,
) -> None:
    ends = tmp_path / "ends.py"
    ends.write_text(
        "import jax\n"
        "jax.jit(lambda x: jax.debug.callback(print, x) or x)(1.0)\n"
        "print('last line')\n"
    )
    fails = tmp_path / "fails.py"
    fails.write_text(
        "import jax\njax.jit(lambda x: jax.debug.callback(lambda v: 1 / 0, x) or x)(1.0)\n"
    )
    ended, failed = run_programs([ends, fails])
    assert ended == Run("last line\n1.0\n", None)
    assert failed.error is not None and failed.error[0] == "ZeroDivisionError"


@pytest.mark.parametrize(
    ("printed", "expected", "same"),
    [
        pytest.param("0.714, 0.495\n", "0.7141, 0.4951\n", True, id="TPU matmul precision"),
        pytest.param("[1.0, -2.5] ok\n", "[1.0, -2.5] ok\n", True, id="identical"),
        pytest.param("0.7 0.5\n", "0.7141 0.4951\n", False, id="two digits off"),
        pytest.param("0.0001\n", "0.0\n", True, id="near zero"),
        pytest.param("loss 1.0\n", "lost 1.0\n", False, id="other text"),
        pytest.param("1.0 2.0\n", "1.0\n", False, id="another count of numbers"),
    ],
)
def test_printed_numbers_match_within_a_backends_precision(
    printed: str, expected: str, same: bool
) -> None:
    assert same_output(printed, expected) is same
