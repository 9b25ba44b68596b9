"""JF105's fix runs a pool's work in the trace: only work that is JAX code can run there."""

from __future__ import annotations

import textwrap

import pytest

from jaxfix.rules.registry import all_rules, find_rule
from jaxfix.run.engine import check_text, fix_text

RULE = find_rule("JF105")
PROGRAM = """\
import concurrent.futures
import pickle

import jax
import jax.numpy as jnp
import numpy as np

DB = {{}}


def helper(v):
    return jnp.tanh(v) * 2


def work(v):
{body}


@jax.jit
def f(xs):
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        out = list(pool.map(work, [xs[0], xs[1]]))
    return jnp.stack(out)
"""


@pytest.mark.parametrize(
    ("body", "fixed"),
    [
        pytest.param("return jnp.sin(v) + v.sum()", True, id="jax functions and array methods"),
        pytest.param("y = helper(v)\n    return max(y, 0)", True, id="a JAX helper of the module"),
        pytest.param("return float(v) * 2", False, id="a host conversion"),
        pytest.param("return np.asarray(v) * 2", False, id="NumPy"),
        pytest.param("return v.item()", False, id="an array method leaving the trace"),
        pytest.param("DB['v'] = v\n    return v", False, id="a store outside it"),
        pytest.param("pickle.dumps(v)\n    return v", False, id="a serializer"),
    ],
)
def test_the_work_moves_into_the_trace_only_when_it_is_jax_code(body: str, fixed: bool) -> None:
    assert RULE is not None
    text = PROGRAM.format(body=f"    {body}")
    (found,) = check_text(text, [RULE])
    assert (found.fix_title is not None) is fixed
    assert [found] == check_text(text, [RULE], slicing=False)  # the slice holds no helper


@pytest.mark.parametrize(
    ("body", "why"),
    [
        pytest.param("return float(v) * 2", "it calls `float`", id="a host conversion"),
        pytest.param("DB['v'] = v\n    return v", "it stores into `DB['v']`", id="a store"),
        pytest.param("return np.asarray(v).max()", "it calls `np.asarray`", id="innermost"),
    ],
)
def test_the_message_says_what_keeps_the_work_out_of_the_trace(body: str, why: str) -> None:
    assert RULE is not None
    (found,) = check_text(PROGRAM.format(body=f"    {body}"), [RULE])
    assert found.fix_title is None
    assert f"(not rewritten: `work` cannot run in the trace: {why}" in found.note


def test_numpy_that_runs_on_the_array_is_jax_code() -> None:
    assert RULE is not None
    (found,) = check_text(PROGRAM.format(body="    return np.sum(v * 2) + np.mean(v)"), [RULE])
    assert found.fix_title is not None


ITEMS = """\
from concurrent.futures import ThreadPoolExecutor

import jax
import jax.numpy as jnp


def noisy(v):
    print("called")
    return v


@jax.jit
def f(x):
    {items}
    with ThreadPoolExecutor(2) as pool:
        out = list(pool.map(lambda op: op(x), ops))
    return jnp.stack(out)
"""


@pytest.mark.parametrize(
    ("items", "fixed"),
    [
        pytest.param("ops = (jnp.sin, jnp.cos)", True, id="a tuple of JAX functions"),
        pytest.param("ops = [jnp.sin, jnp.cos]", True, id="a list read only by the pool"),
        pytest.param("ops = [jnp.sin, noisy]", False, id="one prints"),
        pytest.param("ops = [jnp.sin]\n    ops.append(jnp.cos)", False, id="a list that grows"),
        pytest.param("ops = (jnp.sin, x)", False, id="an item that is not a function"),
    ],
)
def test_work_calling_its_items_moves_only_when_they_are_jax_functions(
    items: str, fixed: bool
) -> None:
    assert RULE is not None
    (found,) = check_text(ITEMS.format(items=items), [RULE])
    assert (found.fix_title is not None) is fixed


def test_the_pool_fix_follows_jax_numpy_namesakes_in_the_next_round() -> None:
    """The work's `np.asarray` blocks the pool's fix until JF104 makes it `jax.numpy`'s; one
    `apply` then does both, the pool's rewrite in the round after."""
    source = textwrap.dedent("""\
        import multiprocessing

        import jax
        import jax.numpy as jnp
        import numpy as np


        def block_energy(block):
            centred = np.asarray(block) - np.mean(block)
            return np.sum(centred**2)


        @jax.jit
        def energy(params):
            blocks = [params[i : i + 3] for i in range(0, params.shape[0], 3)]
            with multiprocessing.Pool(2) as workers:
                energies = workers.map(block_energy, blocks)
            return jnp.stack(energies)
        """)
    fixed = fix_text(source, all_rules(), unsafe_fixes=True)
    assert sorted(d.code for d in fixed.fixed) == ["JF104", "JF105"]
    assert "centred = jnp.asarray(block) - np.mean(block)" in fixed.text
    assert "energies = list(map(block_energy, blocks))" in fixed.text
    assert "multiprocessing" not in fixed.text
    assert check_text(fixed.text, all_rules()) == []
