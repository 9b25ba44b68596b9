"""Evidence that a value is a Python value, not a tracer: pytree fields declared static (in the
module of the class, known wherever an instance is used, in every module of a run) and functions
that answer with Python values whatever they are given (a path's string, a tree's structure).
Each look-alike that must stay silent has a traced twin that must still be flagged."""

from __future__ import annotations

import textwrap

import pytest

from jaxfix.rules.registry import all_rules
from jaxfix.run.engine import check_text

RULES = all_rules()


def codes(source: str) -> list[tuple[int, str]]:
    """(line, code) of each finding in `source`."""
    return [(d.line, d.code) for d in check_text(textwrap.dedent(source), RULES)]


# -- `functools.partial(register_dataclass, ...)` as a class decorator -----------------------

REGISTERED = """\
import dataclasses
import functools
import jax
import numpy as np

@functools.partial(jax.tree_util.register_dataclass, data_fields={data}, meta_fields={meta})
@dataclasses.dataclass
class Grid:
    cells: jax.Array
    factors: tuple

@jax.jit
def fold(grid):
    n = int(np.prod(grid.factors))
    return grid.cells * n
"""


def test_a_meta_field_of_a_partial_registered_dataclass_is_static() -> None:
    assert codes(REGISTERED.format(data='["cells"]', meta='["factors"]')) == []


def test_a_data_field_of_a_partial_registered_dataclass_stays_traced() -> None:
    found = codes(REGISTERED.format(data='["cells", "factors"]', meta="[]"))
    assert (14, "JF104") in found


def test_meta_fields_given_by_position_to_partial_are_static() -> None:
    source = REGISTERED.replace("data_fields={data}, meta_fields={meta}", '["cells"], ["factors"]')
    assert codes(source) == []


# -- functions that return Python values -----------------------------------------------------

PATHS = """\
import jax

SCALES = {{"['a']": 2.0}}

@jax.jit
def scale(tree):
    out = {{}}
    for path, leaf in jax.tree_util.tree_leaves_with_path(tree):
        key = {key}
        if key in SCALES:
            leaf = leaf * SCALES[key]
        out[key] = leaf
    return out
"""


def test_a_path_as_a_string_is_a_python_value() -> None:
    assert codes(PATHS.format(key="jax.tree_util.keystr(path)")) == []


def test_a_leaf_used_as_a_key_is_still_traced() -> None:
    assert (10, "JF106") in codes(PATHS.format(key="leaf"))


def test_keystr_of_a_traced_value_is_a_python_value() -> None:
    source = """\
        import jax

        @jax.jit
        def f(x):
            seen = {}
            seen[jax.tree_util.keystr(x)] = 1
            seen[x] = 2
            return x
        """
    assert codes(source) == [(7, "JF106")]


STRUCTURE = """\
import jax

CACHE = {{}}

@jax.jit
def f(tree):
    leaves, treedef = jax.tree_util.tree_flatten(tree)
    structure = jax.tree_util.tree_structure(tree)
    CACHE.setdefault({key}, 0)
    return treedef.unflatten(leaves)
"""


@pytest.mark.parametrize("key", ["treedef", "structure", "treedef.num_leaves", "len(leaves)"])
def test_a_tree_structure_is_a_python_value(key: str) -> None:
    assert [c for c in codes(STRUCTURE.format(key=key)) if c[1] == "JF106"] == []


def test_the_leaves_of_a_flatten_stay_traced() -> None:
    found = codes(STRUCTURE.format(key="leaves[0]"))
    assert (9, "JF106") in found
