"""Evidence that a value is a Python value, not a tracer: pytree fields declared static (in the
module of the class, known wherever an instance is used, in every module of a run) and functions
that answer with Python values whatever they are given (a path's string, a tree's structure).
Each look-alike that must stay silent has a traced twin that must still be flagged."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from jaxfix.cli import main
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


# -- static fields across the modules of a run -----------------------------------------------

BASE = """\
from typing import Any
import jax
from flax import struct


@struct.dataclass
class Base:
    tag: str = struct.field(pytree_node=False)


@struct.dataclass
class System(Base):
    masses: jax.Array
    model: Any = struct.field(pytree_node=False, default=None)
"""

CHECKS = """\
import numpy as np


def validate(model):
    if np.any(np.asarray(model.limits) > 3):
        raise ValueError("bad")
"""

PIPELINE = """\
from typing import Optional
import jax
from pkg import checks
{imports}


@jax.jit
def init(sys: {annotation}, q: jax.Array):
    checks.validate(sys.{field})
    print(sys.tag)
    return q
"""


def project_findings(root: Path, files: dict[str, str]) -> list[str]:
    """`file:line CODE` of each finding of a run over the package `files` make."""
    for name, text in {"pkg/__init__.py": "", **files}.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    result = CliRunner().invoke(main, ["check", "--no-cache", "--exit-zero", str(root / "pkg")])
    return [
        f"{Path(path).relative_to(root).as_posix()}:{line} {code}"
        for path, line, code in re.findall(r"^(\S+?):(\d+):\d+: (JF\d+)", result.stdout, re.M)
    ]


@pytest.mark.parametrize(
    ("imports", "annotation"),
    [
        ("from pkg.base import System", "System"),
        ("from .base import System", "System"),
        ("from pkg import base", "base.System"),
        ("from . import base as b", "b.System"),
        ("from pkg.base import System", "Optional[System]"),
        ("from pkg.base import System", "System | None"),
    ],
)
def test_a_static_field_declared_in_another_module_is_static(
    tmp_path: Path, imports: str, annotation: str
) -> None:
    pipeline = PIPELINE.format(imports=imports, annotation=annotation, field="model")
    files = {"pkg/base.py": BASE, "pkg/checks.py": CHECKS, "pkg/pipeline.py": pipeline}
    assert project_findings(tmp_path, files) == []


def test_a_data_field_of_a_class_of_another_module_stays_traced(tmp_path: Path) -> None:
    pipeline = PIPELINE.format(
        imports="from pkg.base import System", annotation="System", field="masses"
    )
    files = {"pkg/base.py": BASE, "pkg/checks.py": CHECKS, "pkg/pipeline.py": pipeline}
    assert project_findings(tmp_path, files) == ["pkg/checks.py:5 JF104"]


def test_without_the_annotation_a_field_of_that_name_is_not_taken_for_static(
    tmp_path: Path,
) -> None:
    pipeline = PIPELINE.format(imports="", annotation="object", field="model")
    files = {"pkg/base.py": BASE, "pkg/checks.py": CHECKS, "pkg/pipeline.py": pipeline}
    assert project_findings(tmp_path, files) == [
        "pkg/checks.py:5 JF104",
        "pkg/pipeline.py:10 JF104",
    ]


# Uses `System` only in host code: its traced code asks nothing of the classes of other modules.
HOST = """\
import jax
from pkg import checks
from pkg.base import System


def build(masses):
    return System(masses=masses, tag="host")


@jax.jit
def step(q):
    checks.validate(q)
    return q
"""


def test_a_file_whose_analysis_asks_nothing_of_the_static_classes_is_not_analysed_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Both files use `System`, and their traced code calls into the run; only the one whose
    analysis asks about it (a parameter annotated `System`) is analysed again with its static
    fields: the other's analysis would be the same, step for step."""
    from jaxfix.run import runner

    analysed: list[str] = []
    process = runner.process

    def counted(path: Path, job: Any) -> Any:
        analysed.append(Path(path).name)
        return process(path, job)

    monkeypatch.setattr(runner, "process", counted)
    pipeline = PIPELINE.format(
        imports="from pkg.base import System", annotation="System", field="model"
    )
    files = {"pkg/base.py": BASE, "pkg/checks.py": CHECKS, "pkg/pipeline.py": pipeline}
    findings = project_findings(tmp_path, {**files, "pkg/host.py": HOST})
    assert findings == []  # `sys.model` is static
    assert analysed.count("pipeline.py") == 2
    assert analysed.count("host.py") == 1


OTHER_BASES = {
    "equinox": """\
import equinox as eqx
import jax


class System(eqx.Module):
    masses: jax.Array
    tag: str = eqx.field(static=True)
    model: object = eqx.field(static=True, default=None)
""",
    "register_dataclass": """\
import dataclasses
import jax


@dataclasses.dataclass
class System:
    masses: jax.Array
    tag: str
    model: object = None


jax.tree_util.register_dataclass(System, data_fields=["masses"], meta_fields=["tag", "model"])
""",
    "tree_flatten": """\
import jax


@jax.tree_util.register_pytree_node_class
class System:
    def __init__(self, masses, tag, model=None):
        self.masses, self.tag, self.model = masses, tag, model

    def tree_flatten(self):
        return (self.masses,), (self.tag, self.model)

    @classmethod
    def tree_unflatten(cls, aux, children):
        return cls(children[0], *aux)
""",
}


@pytest.mark.parametrize("declared", sorted(OTHER_BASES))
@pytest.mark.parametrize(
    ("field", "expected"), [("model", []), ("masses", ["pkg/checks.py:5 JF104"])]
)
def test_metadata_declared_any_way_is_known_in_another_module(
    tmp_path: Path, declared: str, field: str, expected: list[str]
) -> None:
    pipeline = PIPELINE.format(
        imports="from pkg.base import System", annotation="System", field=field
    )
    files = {
        "pkg/base.py": OTHER_BASES[declared],
        "pkg/checks.py": CHECKS,
        "pkg/pipeline.py": pipeline,
    }
    assert project_findings(tmp_path, files) == expected


MADE = """\
import jax
from pkg import checks
from pkg.base import System


@jax.jit
def init(masses, model):
    sys = System({arguments})
    checks.validate(sys.model)
    return sys.masses
"""


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ('tag="s", masses=masses', []),  # `model` keeps its default
        ('tag="s", masses=masses, model=None', []),
        ('tag="s", masses=masses, model=model', ["pkg/checks.py:5 JF104"]),  # given a tracer
        ('"s", masses, model', ["pkg/checks.py:5 JF104"]),  # which field gets what: unknown
    ],
)
def test_an_instance_made_from_an_imported_class_holds_what_it_is_given(
    tmp_path: Path, arguments: str, expected: list[str]
) -> None:
    files = {
        "pkg/base.py": BASE,
        "pkg/checks.py": CHECKS,
        "pkg/pipeline.py": MADE.format(arguments=arguments),
    }
    assert project_findings(tmp_path, files) == expected


# -- a method of a pytree class whose result is made of its static fields --------------------

SLOTS = """\
import dataclasses
import functools
import jax
import jax.numpy as jnp


@functools.partial(jax.tree_util.register_dataclass, data_fields=["value"], meta_fields=["label"])
@dataclasses.dataclass
class Var:
    value: jax.Array
    label: str

    def get_slot(self):
        return ("slot", self.{field})


def bind(tree, variables):
    table = {{}}
    for var in variables:
        slot = var.get_slot()
        if slot in table:
            raise ValueError(slot)
        table[slot] = var
    return {{name: table[("slot", name)].value * t for name, t in tree.items()}}


def inner(tree, variables):
    return bind(tree, variables)


print(jax.jit(inner)({{"w": 2.0}}, {given}))
"""


def test_a_method_made_of_static_fields_of_instances_given_in_a_list_is_static() -> None:
    assert codes(SLOTS.format(field="label", given='[Var(jnp.ones(2), "w")]')) == []


def test_a_method_made_of_a_data_field_stays_traced() -> None:
    found = codes(SLOTS.format(field="value", given='[Var(jnp.ones(2), "w")]'))
    assert (21, "JF106") in found


def test_a_list_of_other_values_tells_nothing_of_its_elements() -> None:
    found = codes(SLOTS.format(field="label", given='[Var(jnp.ones(2), "w"), jnp.ones(2)]'))
    assert (21, "JF106") in found


# -- a pytree whose every field is metadata holds no tracer ----------------------------------

INDEX = """\
import dataclasses
import functools
import jax


@functools.partial(jax.tree_util.register_dataclass, data_fields={data}, meta_fields={meta})
@dataclasses.dataclass(frozen=True)
class Index:
    n: int
"""

USES = """\
import jax
{imports}

TABLES = {{}}


@jax.jit
def table(index: Index, x):
    TABLES.setdefault(index, 0)
    return x * index.n
"""


def test_an_instance_of_a_metadata_only_pytree_is_a_python_value() -> None:
    source = INDEX.format(data="[]", meta='["n"]') + USES.format(imports="")
    assert codes(source) == []


def test_an_instance_of_a_pytree_with_a_data_field_stays_traced() -> None:
    source = INDEX.format(data='["n"]', meta="[]") + USES.format(imports="")
    assert (18, "JF106") in codes(source)


@pytest.mark.parametrize(
    ("data", "meta", "expected"),
    [("[]", '["n"]', []), ('["n"]', "[]", ["pkg/uses.py:9 JF106"])],
)
def test_a_metadata_only_pytree_of_another_module_is_a_python_value(
    tmp_path: Path, data: str, meta: str, expected: list[str]
) -> None:
    files = {
        "pkg/index.py": INDEX.format(data=data, meta=meta),
        "pkg/uses.py": USES.format(imports="from pkg.index import Index"),
    }
    assert project_findings(tmp_path, files) == expected


def test_a_class_that_fills_its_own_fields_is_not_taken_for_metadata_only() -> None:
    source = INDEX.format(data="[]", meta='["n"]').replace(
        "    n: int\n", "    n: int\n\n    def __init__(self, n):\n        self.n = n\n"
    ) + USES.format(imports="")
    assert (21, "JF106") in codes(source)


@pytest.mark.parametrize(
    ("key", "expected"),
    [("jax.typeof(x)", []), ("jax.core.get_aval(x)", []), ("x", [(7, "JF106")])],
)
def test_an_abstract_value_is_a_python_value(key: str, expected: list[tuple[int, str]]) -> None:
    source = f"""\
        import jax

        KERNELS = {{}}

        @jax.jit
        def f(x):
            kernel = KERNELS.get({key})
            return x
        """
    assert codes(source) == expected


# -- properties declared as Python values ----------------------------------------------------

INDEXES = """\
import jax
import jax.numpy as jnp
from flax import struct


class Index(struct.Pytree):
    @property
    def n_states(self) {returns}:
        return NotImplemented


@struct.dataclass
class Table(Index):
    states: jax.Array

    @property
    def n_states(self):
        return self.states.shape[0]
"""

CHUNKS = """\
import jax
import numpy as np
{imports}


@jax.jit
def chunks(index: {annotation}, x):
    n = int(np.ceil(index.n_states / 128))
    return x * n
"""


@pytest.mark.parametrize(
    ("imports", "annotation"),
    [
        ("from pkg.indexes import Index", "Index"),
        ("from pkg.indexes import Table", "Table"),
        ("from pkg import indexes", "indexes.Index"),
    ],
)
@pytest.mark.parametrize("returns", ["-> int", "-> 'int'", "-> int | None", "-> tuple[int, ...]"])
def test_a_property_declared_a_python_value_in_another_module_is_static(
    tmp_path: Path, imports: str, annotation: str, returns: str
) -> None:
    files = {
        "pkg/indexes.py": INDEXES.format(returns=returns),
        "pkg/chunks.py": CHUNKS.format(imports=imports, annotation=annotation),
    }
    assert project_findings(tmp_path, files) == []


@pytest.mark.parametrize("returns", ["", "-> float", "-> jax.Array", "-> tuple[int, jax.Array]"])
def test_a_property_not_declared_a_python_value_stays_traced(tmp_path: Path, returns: str) -> None:
    files = {
        "pkg/indexes.py": INDEXES.format(returns=returns),
        "pkg/chunks.py": CHUNKS.format(imports="from pkg.indexes import Index", annotation="Index"),
    }
    assert project_findings(tmp_path, files) == ["pkg/chunks.py:8 JF104", "pkg/chunks.py:8 JF104"]
