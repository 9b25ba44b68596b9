"""The deep-stack thread every analysis runs on (`jaxfix.run.deepstack`)."""

from __future__ import annotations

import threading

import pytest

from jaxfix.run.deepstack import RECURSION_LIMIT, call_with_deep_stack


def test_every_call_runs_on_the_same_thread_which_keeps_what_it_learned() -> None:
    """What an analysis keeps for the next one of the same file lives on that thread."""
    first = call_with_deep_stack(threading.current_thread)
    second = call_with_deep_stack(threading.current_thread)
    assert first is second is not threading.current_thread()


def test_a_call_from_the_thread_itself_runs_in_place() -> None:
    assert call_with_deep_stack(lambda: call_with_deep_stack(lambda: 42)) == 42


def test_the_exception_reaches_the_caller() -> None:
    def fail() -> None:
        raise ValueError("in the analysis")

    with pytest.raises(ValueError, match="in the analysis"):
        call_with_deep_stack(fail)
    assert call_with_deep_stack(lambda: "still serving") == "still serving"


def test_recursion_far_deeper_than_the_main_thread_allows() -> None:
    def depth(n: int) -> int:
        return 0 if n == 0 else 1 + depth(n - 1)

    assert call_with_deep_stack(lambda: depth(RECURSION_LIMIT // 2)) == RECURSION_LIMIT // 2
