"""A dict whose keys a flatten reorders: jax hands a host callback (and returns out of `jit`) a
dict rebuilt with its keys sorted, so a statement that prints or pickles one whole must not move
into a callback. The analysis marks such dicts (`Value.reorders`) and the parameters traced code
may give one (`Facts.reordering`), within a module and across modules (`External`)."""

from __future__ import annotations

import ast
import dataclasses
import textwrap
from pathlib import Path

import pytest

from jaxfix.analysis.external import External
from jaxfix.analysis.file import FileAnalysis, analyse_file
from jaxfix.analysis.project import Place, entry_from_plain, traced_calls
from jaxfix.rules.registry import all_rules
from jaxfix.run import engine
from jaxfix.run.engine import fix_text
from tests.test_project import invoke, tree

RULES = all_rules()

HELPERS = """\
import logging

logger = logging.getLogger(__name__)


def log_value(v):
    logger.info("tree %s", v)


def a(tree):
    log_value(tree)
"""
HEADER = f"import jax\nimport jax.numpy as jnp\n{HELPERS}\n\n"


def analysed(source: str, external: tuple[External, ...] = ()) -> FileAnalysis:
    source = textwrap.dedent(source)
    return analyse_file(ast.parse(source), source, external=external)


def reordering(source: str, external: tuple[External, ...] = ()) -> set[str]:
    """`function.parameter` for each parameter that may be given a reordered dict."""
    facts = analysed(source, external).facts
    nodes = facts.module.nodes
    return {f"{getattr(nodes[p.function], 'name', '?')}.{p.name}" for p in facts.reordering}


def jitted(*body: str) -> str:
    lines = "\n".join(f"    {line}" for line in body)
    return f"{HEADER}@jax.jit\ndef step(x):\n    h = jnp.tanh(x)\n{lines}\n    return h * 2\n"


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (['log_value({"h": h, "g": h * 2})'], {"log_value.v"}),
        (['log_value({"g": h * 2, "h": h})'], set()),
        (['tree = {"h": h, "g": h * 2}', "log_value(tree)"], {"log_value.v"}),
        (['tree = {"g": h * 2, "h": h}', "log_value(tree)"], set()),
        (["log_value({1: h, 0: h})"], {"log_value.v"}),  # not strings: not as sorted
        (["log_value({str(i): h for i in range(2)})"], {"log_value.v"}),
        (['log_value({**{"a": h}})'], {"log_value.v"}),  # a `**`: the order it gives
        (["log_value(dict(h=h, g=h))"], {"log_value.v"}),
        (["log_value(dict(g=h, h=h))"], set()),
        (['log_value(({"h": h, "g": h}, h))'], {"log_value.v"}),  # held in a tuple
        (['tree = {"h": h, "g": h}', 'log_value(tree["h"])'], set()),  # a leaf of it
        (["log_value(h)"], set()),
    ],
    ids=[
        "unsorted-display",
        "sorted-display",
        "unsorted-name",
        "sorted-name",
        "int-keys",
        "comprehension",
        "double-star",
        "dict-call",
        "sorted-dict-call",
        "in-a-tuple",
        "leaf",
        "array",
    ],
)
def test_a_parameter_given_a_dict_out_of_sorted_key_order_is_noted(
    body: list[str], expected: set[str]
) -> None:
    assert reordering(jitted(*body)) == expected


def test_a_dict_a_helper_returns_or_a_branch_may_bind_is_noted() -> None:
    made = "def make(h):\n    return {'h': h, 'g': h}\n\n\n"
    assert reordering(made + jitted("log_value(make(h))")) == {"log_value.v"}
    sorted_made = made.replace("{'h': h, 'g': h}", "{'g': h, 'h': h}")
    assert reordering(sorted_made + jitted("log_value(make(h))")) == set()
    branches = 't = {"h": h, "g": h} if h.ndim else {"a": h}'
    assert reordering(jitted(branches, "log_value(t)")) == {"log_value.v"}


def test_a_parameter_handed_on_whole_passes_the_fact_on_a_derived_value_does_not() -> None:
    source = HEADER + textwrap.dedent("""\
        def inner(v, w):
            logger.info("%s %s", v, w)


        def outer(tree, other):
            alias = tree
            inner(alias, other["h"])


        @jax.jit
        def step(x):
            outer({"h": x, "g": x}, {"h": x, "g": x})
            return x
        """)
    assert reordering(source) == {"outer.tree", "outer.other", "inner.v"}
    sorted_first = source.replace('outer({"h": x, "g": x},', 'outer({"g": x, "h": x},')
    assert reordering(sorted_first) == {"outer.other"}


def test_another_modules_call_gives_its_reordered_dicts_to_the_parameters_it_names() -> None:
    given = External("a", positions=(0,), reordering_positions=(0,))
    assert reordering(HELPERS, (given,)) == {"a.tree", "log_value.v"}
    by_keyword = External("a", keywords=("tree",), reordering_keywords=("tree",))
    assert reordering(HELPERS, (by_keyword,)) == {"a.tree", "log_value.v"}
    assert reordering(HELPERS, (External("a", positions=(0,)),)) == set()


def test_a_call_into_another_module_says_which_arguments_are_reordered_dicts() -> None:
    steps = textwrap.dedent("""\
        import jax
        import jax.numpy as jnp

        from pkg.helpers import a


        @jax.jit
        def step(x):
            h = jnp.tanh(x)
            tree = {"h": h, "g": h * 2}
            a(tree, h, tree=tree)
            return h
        """)
    place = Place("pkg.steps", "pkg")
    (call,) = traced_calls(analysed(steps), place, ("pkg",))
    assert call.target == "pkg.helpers.a"
    assert (call.entry.reordering_positions, call.entry.reordering_keywords) == ((0,), ("tree",))
    assert entry_from_plain(dataclasses.asdict(call.entry)) == call.entry  # through the cache
    sorted_keys = steps.replace('{"h": h, "g": h * 2}', '{"g": h * 2, "h": h}')
    (call,) = traced_calls(analysed(sorted_keys), place, ("pkg",))
    assert (call.entry.reordering_positions, call.entry.reordering_keywords) == ((), ())


# ----- the fixes --------------------------------------------------------------------------


@pytest.fixture(autouse=True)
def later_rounds_analyse_parts(monkeypatch: pytest.MonkeyPatch) -> None:
    """Later rounds across modules analyse only the part of a file their entries need."""
    monkeypatch.setattr(engine, "MIN_OUTLINED", 0)


STEPS = """\
import jax
import jax.numpy as jnp
from pkg.helpers import log_value


@jax.jit
def step(x):
    h = jnp.tanh(x)
    tree = {"h": h, "g": h * 2}
    log_value(tree)
    return h * 2
"""
SORTED = ('{"h": h, "g": h * 2}', '{"g": h * 2, "h": h}')


def applied(root: Path, files: dict[str, str]) -> dict[str, str]:
    """The files of the project `files` in `root` once `jaxfix apply --unsafe-fixes` ran."""
    tree(root, files)
    invoke("apply", "--unsafe-fixes", "--no-cache", str(root))
    return {name: (root / name).read_text() for name in files}


# What the host function of a parameter that may be given a dict out of key order starts
# with: the keys kept at trace time, where the dict is still the caller's, put back in order.
KEPT = "v_keys = tuple(v) if isinstance(v, dict) else None\n"
RESTORED = """\
    def _host_info(v, v_keys=v_keys):
        if v_keys is not None:
            v = {k: v[k] for k in v_keys}
"""


def keeps_key_order(fixed: str) -> bool:
    return KEPT in fixed and RESTORED in fixed


def test_a_helper_of_another_module_given_a_dict_out_of_key_order_logs_it_in_order(
    tmp_path: Path,
) -> None:
    """The callback gets the dict with its keys sorted: it puts them back in the order the
    caller's dict had (`{'h': ..., 'g': ...}`), only where a caller may give such a dict."""
    files = {"pkg/__init__.py": "", "pkg/steps.py": STEPS, "pkg/helpers.py": HELPERS}
    after = applied(tmp_path / "unsorted", files)
    assert keeps_key_order(after["pkg/helpers.py"]), after["pkg/helpers.py"]
    assert "jax.debug.callback(_host_info, v, ordered=True)" in after["pkg/helpers.py"]
    files["pkg/steps.py"] = STEPS.replace(*SORTED)
    after = applied(tmp_path / "sorted", files)
    assert "jax.debug.callback(_host_info, v, ordered=True)" in after["pkg/helpers.py"]
    assert "v_keys" not in after["pkg/helpers.py"]


def test_a_chain_of_helpers_through_modules_logs_the_dict_in_key_order(tmp_path: Path) -> None:
    middle = "from pkg.helpers import log_value\n\n\ndef a(tree):\n    log_value(tree)\n"
    steps = STEPS.replace("from pkg.helpers import log_value", "from pkg.middle import a")
    steps = steps.replace("log_value(tree)", "a(tree)")
    files = {
        "pkg/__init__.py": "",
        "pkg/steps.py": steps,
        "pkg/middle.py": middle,
        "pkg/helpers.py": HELPERS,
    }
    after = applied(tmp_path / "unsorted", files)
    assert keeps_key_order(after["pkg/helpers.py"]), after["pkg/helpers.py"]
    files["pkg/steps.py"] = steps.replace(*SORTED)
    after = applied(tmp_path / "sorted", files)
    assert "jax.debug.callback(_host_info, v, ordered=True)" in after["pkg/helpers.py"]
    assert "v_keys" not in after["pkg/helpers.py"]


@pytest.mark.parametrize("call", ["log_value(tree)", "a(tree)"], ids=["helper", "chain"])
def test_a_helper_of_the_module_given_a_dict_out_of_key_order_logs_it_in_order(
    call: str,
) -> None:
    source = jitted('tree = {"h": h, "g": h * 2}', call)
    assert keeps_key_order(fix_text(source, RULES, unsafe_fixes=True).text)
    fixed = fix_text(source.replace(*SORTED), RULES, unsafe_fixes=True).text
    assert "jax.debug.callback(_host_info, v, ordered=True)" in fixed
    assert "v_keys" not in fixed


RETURNS = """\
import pickle

import jax

BLOBS = []


def make(h):
    return {"h": h, "g": h * 2}


@jax.jit
def _step(x):
    tree = %s
    BLOBS.append(pickle.dumps(tree))
    return x


_step(1.0)
"""


@pytest.mark.parametrize(
    "made", ["make(x)", '{"h": x, "g": x} if x.ndim else {"a": x}'], ids=["helper", "branch"]
)
def test_a_dict_out_of_key_order_is_not_returned_to_move_after_the_call(made: str) -> None:
    """A jitted function's dict comes back with its keys sorted, also one a helper makes or
    one a branch may give: the statement goes to a callback, which puts the keys back in
    order (after checking that it got a dict: the analysis cannot be sure of one)."""
    source = RETURNS % made
    fixed = fix_text(source, RULES, unsafe_fixes=True).text
    assert "_step(1.0)\n" in fixed and "tree = _step(1.0)" not in fixed
    assert "tree_keys = tuple(tree) if isinstance(tree, dict) else None\n" in fixed
    assert "jax.debug.callback(_host_pickle_dumps, tree, ordered=True)" in fixed
    sorted_keys = RETURNS.replace(*SORTED) % made.replace('{"h": x, "g": x}', '{"g": x, "h": x}')
    assert "_, tree = _step(1.0)\n" in fix_text(sorted_keys, RULES, unsafe_fixes=True).text
