"""Which NumPy and SciPy functions need the data of a traced array: `numpy_scipy.tsv`, made by
`scripts/numpy_model.py` calling each public function on tracers under the pinned jax."""

from __future__ import annotations

import enum
import functools
from dataclasses import dataclass
from importlib import resources

TABLE = "numpy_scipy.tsv"
_NONE = "-"


class Behaviour(enum.StrEnum):
    """What a function did with a tracer."""

    CONVERTS = "converts"  # raised a conversion error for every argument pattern tried
    WORKS = "works"  # ran on the tracer for some arguments (`np.sum`: the array's own method)
    UNKNOWN = "unknown"  # no pattern ran or converted, or it was not called


@dataclass(frozen=True)
class FunctionModel:
    """One row: the function's full name, what it did, the jax function of the same name
    (`jax.numpy.sin`) if it converts and one exists, and the error or pattern seen."""

    function: str
    behaviour: Behaviour
    namesake: str | None
    detail: str


@functools.cache
def table() -> dict[str, FunctionModel]:
    """Every row of the table, by full name (`numpy.linalg.norm`, `scipy.stats.norm.pdf`)."""
    text = resources.files(__package__).joinpath(TABLE).read_text(encoding="utf-8")
    return dict(_parse(text))


def _parse(text: str) -> list[tuple[str, FunctionModel]]:
    rows = []
    lines = [line for line in text.splitlines() if line and not line.startswith("#")]
    for line in lines[1:]:  # the first is the column names
        function, behaviour, namesake, detail = line.split("\t")
        model = FunctionModel(
            function, Behaviour(behaviour), None if namesake == _NONE else namesake, detail
        )
        rows.append((function, model))
    return rows


@functools.cache
def converting() -> frozenset[str]:
    """The full names of the functions that convert a tracer: host conversion sinks."""
    return frozenset(name for name, row in table().items() if row.behaviour is Behaviour.CONVERTS)


def sink(function: str) -> FunctionModel | None:
    """The model of `function` if it is a host conversion sink, else None."""
    row = table().get(function)
    return row if row is not None and row.behaviour is Behaviour.CONVERTS else None


def works(function: str) -> bool:
    """Whether `function` ran on a tracer (`np.mean`: the array's own method): given a traced
    array, it gives a traced array (or what its shape says)."""
    row = table().get(function)
    return row is not None and row.behaviour is Behaviour.WORKS
