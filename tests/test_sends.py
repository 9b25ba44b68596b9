"""Sends to other processes and stores written through the object a constructor makes: a
traced value given there is reported (JF105 for another process, JF101 for a store), the same
objects given static values, or used eagerly, are not. The libraries need not be installed:
jaxfix never imports them."""

from __future__ import annotations

import textwrap

import pytest

from jaxfix.rules.registry import all_rules
from jaxfix.run.engine import check_text

RULES = all_rules()
HEADER = """\
import multiprocessing as mp
import threading

import dask
import diskcache
import h5py
import jax
import ray
import redis
from dask.distributed import Client

SHARED = mp.Manager().dict()
ITEMS = mp.Manager().list()
CLIENT = Client()
CACHE = diskcache.Cache("cache")
R = redis.Redis()


@ray.remote
def work(x):
    return x


@ray.remote(num_cpus=1)
class Actor:
    def step(self, x):
        return x


ACTOR = Actor.remote()
remote_square = ray.remote(abs)


def plain(x):
    return x


@jax.jit
def f(x, n):
    y = x * 2
{line}
    return y
"""

SENT = {
    'SHARED["k"] = y': "JF105",
    "SHARED.update(k=y)": "JF105",
    "ITEMS.append(y)": "JF105",
    "ray.put(y)": "JF105",
    "CLIENT.submit(abs, y)": "JF105",
    "CLIENT.scatter(y)": "JF105",
    "work.remote(y)": "JF105",
    "remote_square.remote(y)": "JF105",
    "dask.delayed(abs)(y)": "JF105",
    "threading.Timer(1.0, print, args=(y,)).start()": "JF105",
    "threading.Timer(1.0, print, [y]).start()": "JF105",
    "with mp.get_context('fork').Manager() as m:\n        m.dict()['k'] = y": "JF105",
    'CACHE.set("k", y)': "JF101",
    'CACHE["k"] = y': "JF101",
    "CACHE.push(y)": "JF101",
    'diskcache.Index("i").setdefault("k", y)': "JF101",
    'R.set("k", y)': "JF101",
    'R.lpush("q", 1, y)': "JF101",
    'with h5py.File("a.h5", "w") as h:\n        h.create_dataset("y", data=y)': "JF101",
    'with h5py.File("a.h5", "w") as h:\n        h["y"] = y': "JF101",
}
SILENT = [
    'SHARED["k"] = y.shape',
    "ITEMS.append(x.ndim)",
    "ray.put(x.shape)",
    "work.remote(x.shape)",
    "plain.remote(y)",
    "work = plain\nwork.remote(y)",
    "dask.delayed(abs)(x.ndim)",
    "threading.Timer(1.0, print, args=(x.ndim,)).start()",
    "threading.Timer(y.size, print).start()",
    'CACHE.set("k", x.shape)',
    'CACHE["k"] = str(x.dtype)',
    "y = y.at[0].set(1.0)",
    'd = {}\nd.setdefault("k", y)',
    'R.set("k", "static")',
]


def _codes(line: str) -> list[str]:
    text = HEADER.format(line=textwrap.indent(line, "    "))
    found = check_text(text, RULES)
    assert found == check_text(text, RULES, slicing=False)
    return [d.code for d in found]


@pytest.mark.parametrize("line", list(SENT), ids=list(SENT))
def test_a_traced_value_sent_or_stored_is_reported(line: str) -> None:
    assert _codes(line) == [SENT[line]]


@pytest.mark.parametrize("line", SILENT, ids=SILENT)
def test_static_values_and_namesakes_stay_silent(line: str) -> None:
    assert _codes(line) == []


def test_the_same_objects_used_eagerly_stay_silent() -> None:
    eager = HEADER.format(line="    pass") + textwrap.dedent(
        """
        y = jax.numpy.ones(2)
        SHARED["k"] = y
        ray.put(y)
        CACHE.set("k", y)
        CLIENT.scatter(y)
        """
    )
    assert check_text(eager, RULES) == []


def test_a_store_bound_where_the_first_pass_does_not_look_stays_silent() -> None:
    """A cache a function binds by assignment, around a jitted closure: the candidates (and
    so the rule) leave a method as common as `set` on it alone."""
    text = textwrap.dedent(
        """\
        import diskcache
        import jax

        def main(x):
            cache = diskcache.Cache("c")

            @jax.jit
            def inner(y):
                cache.set("k", y)
                return y

            return inner(x)
        """
    )
    assert check_text(text, RULES) == check_text(text, RULES, slicing=False) == []
