"""JF103 cases that need no jax run: what the rule leaves to others or cannot know outlives."""

from __future__ import annotations

import textwrap

from jaxfix.engine import check_text
from jaxfix.registry import find_rule

RULE = find_rule("JF103")


def lines(source: str) -> list[int]:
    assert RULE is not None
    return [d.line for d in check_text(textwrap.dedent(source), [RULE])]


def test_multiprocessing_queues_are_left_to_parallel_in_traced() -> None:
    assert lines("""\
        import multiprocessing as mp
        import queue
        import jax
        EVENTS = mp.Queue()
        OTHER = mp.get_context("spawn").Queue()
        PLAIN = queue.Queue()
        SINK = make_sink()
        @jax.jit
        def f(x):
            EVENTS.put(x)
            OTHER.put(x)
            PLAIN.put(x)
            SINK.put(x)
            return x
        """) == [12, 13]


def test_self_of_an_instance_made_in_the_trace_does_not_outlive_it() -> None:
    assert lines("""\
        import jax
        class Dense:
            def __call__(self, x):
                self.out = x * 2
                return self.out
        class Recorder:
            def add(self, v):
                self.rows.append(v)
        rec = Recorder()
        @jax.jit
        def f(x):
            y = Dense()(x)
            rec.add(y)
            return y
        """) == [8]


def test_static_results_of_unknown_calls_are_not_leaks() -> None:
    assert (
        lines("""\
        import jax
        def outer(f, *args):
            out_tree = None
            def g(*a):
                nonlocal out_tree
                out_tree = jax.tree_util.tree_structure(f(*a))
            jax.eval_shape(g, *args)
            return out_tree
        """)
        == []
    )
