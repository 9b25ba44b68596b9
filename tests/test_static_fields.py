"""Evidence that a value is a Python value, not a tracer: pytree fields declared static (in the
module of the class, known wherever an instance is used, in every module of a run) and functions
that answer with Python values whatever they are given (a path's string, a tree's structure).
Each look-alike that must stay silent has a traced twin that must still be flagged."""

from __future__ import annotations

import textwrap

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
