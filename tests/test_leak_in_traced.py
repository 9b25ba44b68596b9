"""JF103 cases that need no jax run: what the rule leaves to others or cannot know outlives."""

from __future__ import annotations

import textwrap

from jaxfix.rules.registry import find_rule
from jaxfix.run.engine import check_text

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


def test_a_dict_attribute_the_class_makes_keeps_what_is_stored_in_it() -> None:
    """`self.cache = {}` in `__init__` makes `self.cache[...] = y` and `.update` stores into an
    object that outlives the trace; a class that makes the attribute an array does not."""
    assert lines("""\
        import functools
        import jax
        class Memo:
            def __init__(self):
                self.cache = {}
                self.table = jax.numpy.zeros(3)
            @functools.partial(jax.jit, static_argnums=0)
            def f(self, x):
                y = x * 2
                self.cache["last"] = y
                self.cache.update(prev=y)
                self.table.at[0].set(y)
                return y
        """) == [10, 11]
