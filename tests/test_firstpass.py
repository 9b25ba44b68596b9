"""The first pass: CPython's verdict on a file, and the slice of it that LibCST analyses.

The slice is only a speed-up, so the key property is that the findings are the same, at the
same positions, with and without it: checked here on every fixture and on the example project,
each padded with unrelated code between its statements.
"""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest

from jaxfix.analysis import candidates_read
from jaxfix.analysis.file import analyse_file
from jaxfix.analysis.firstpass import MAX_DEPTH, InvalidSource, Slice, parse, relevant_slice
from jaxfix.proofs.cases import load_cases
from jaxfix.rules.registry import all_rules
from jaxfix.run.deepstack import call_with_deep_stack
from jaxfix.run.engine import check_text

RULES = all_rules()
ROOT = Path(__file__).resolve().parent.parent
ANCHORS = frozenset().union(*(rule.anchors for rule in RULES))


def sliced(text: str) -> Slice | None:
    """The slice as the engine makes it, on a stack as deep as the engine's."""

    def make() -> Slice | None:
        tree = ast.parse(text)
        found = candidates_read.collect(tree, analyse_file(tree, text))
        return relevant_slice(text, tree, found.statements(ANCHORS, True), found.bindings)

    return call_with_deep_stack(make)


def kept_text(source: str) -> str:
    piece = sliced(textwrap.dedent(source))
    assert piece is not None
    return piece.text


# --- CPython's verdict


def test_a_syntax_error_has_cpythons_position_and_wording() -> None:
    with pytest.raises(InvalidSource) as caught:
        parse("import jax\nx = (1,\n", "bad.py")
    assert (caught.value.line, caught.value.column) == (2, 5)
    assert caught.value.problem == "syntax error: '(' was never closed"


def test_nesting_that_overflows_cpythons_parser_is_reported() -> None:
    with pytest.raises(InvalidSource, match="too deeply nested for Python's parser"):
        parse("x = " + "-" * 100_000 + "1\n", "deep.py")


# --- what the slice keeps


def test_unrelated_statements_are_dropped_and_lines_map_back() -> None:
    text = textwrap.dedent("""\
        import pickle
        import jax
        import numpy as np

        def unrelated(x):
            return np.sum(x)

        BLOBS = []

        @jax.jit
        def step(x):
            BLOBS.append(pickle.dumps(x))
            return x
        """)
    piece = sliced(text)
    assert piece is not None and not piece.whole
    assert piece.text == textwrap.dedent("""\
        import pickle
        import jax
        BLOBS = []
        @jax.jit
        def step(x):
            BLOBS.append(pickle.dumps(x))
            return x
        """)
    assert [piece.file_line(line) for line in range(1, 8)] == [1, 2, 8, 10, 11, 12, 13]


def test_callers_of_a_kept_function_are_kept_not_their_callers() -> None:
    """Whether code is traced comes from the analysis of the whole file: a caller is kept for
    the rules that look at call sites, its own callers and transform call sites are not."""
    kept = kept_text("""\
        import pickle
        import jax

        def save(x):
            return pickle.dumps(x)

        def middle(x):
            return save(x)

        def unrelated(x):
            return jax.numpy.sum(x)

        compiled = jax.jit(middle)
        """)
    assert "def middle" in kept
    assert "compiled = jax.jit(middle)" not in kept
    assert "unrelated" not in kept


def test_callers_are_kept_only_for_the_seeds_whose_rules_read_them() -> None:
    text = textwrap.dedent("""\
        import pickle
        import jax

        @jax.jit
        def save(x):
            return pickle.dumps(x)

        def caller(x):
            return save(x)
        """)
    tree = ast.parse(text)
    analysed = analyse_file(tree, text)
    found = candidates_read.collect(tree, analysed)
    seeds = found.statements(ANCHORS, True)
    alone = relevant_slice(text, tree, seeds, found.bindings, users_of=set())
    with_users = relevant_slice(text, tree, seeds, found.bindings, users_of=seeds)
    assert alone is not None and with_users is not None
    assert "def caller" not in alone.text
    assert "def caller" in with_users.text


def test_a_dependency_does_not_pull_in_the_other_users_of_its_names() -> None:
    kept = kept_text("""\
        import pickle
        import jax

        STATE = []

        def reader():
            return len(STATE)

        @jax.jit
        def save(x):
            STATE.append(pickle.dumps(x))
        """)
    assert "STATE = []" in kept
    assert "reader" not in kept


def test_names_bound_by_except_and_match_are_definitions() -> None:
    kept = kept_text("""\
        import pickle
        import jax

        try:
            import cloudpickle
        except ImportError as missing:
            cloudpickle = None

        match {"protocol": 5}:
            case {"protocol": protocol}:
                pass

        unrelated = 1

        @jax.jit
        def save(x):
            print(missing)
            return pickle.dumps(x, protocol)
        """)
    assert "except ImportError as missing" in kept
    assert 'case {"protocol": protocol}' in kept
    assert "unrelated" not in kept


def test_statements_sharing_a_line_and_decorators_stay_together() -> None:
    kept = kept_text("""\
        import jax; import pickle
        import numpy

        @jax.jit
        @some.decorator(
            option=1,
        )
        def step(x):
            return pickle.dumps(x)
        """)
    assert kept.startswith("import jax; import pickle\n@jax.jit\n@some.decorator(\n")


def test_a_star_import_is_always_kept() -> None:
    assert "from helpers import *" in kept_text("""\
        from helpers import *
        import jax
        import numpy

        @jax.jit
        def step(x):
            return pickle.dumps(x)
        """)


def test_deep_nesting_is_reported_only_where_it_is_analysed() -> None:
    deep = "(" + " + ".join(["x"] * (MAX_DEPTH + 5)) + ")"
    traced = "import jax, pickle\n@jax.jit\ndef f(x):\n"
    dropped = f"def unrelated(x):\n    return {deep}\n{traced}    pickle.dumps(x)\n"
    assert "unrelated" not in kept_text(dropped)
    kept = f"{traced}    y = {deep}\n    pickle.dumps(y)\n"
    with pytest.raises(InvalidSource, match=f"nested more than {MAX_DEPTH} levels deep") as caught:
        kept_text(kept)
    assert caught.value.line == 4


# --- the slice never changes a finding


FILLER = "\n\ndef _filler_{i}(x):\n    return x + {i}\n\n"


def padded(text: str) -> str:
    """`text` with an unrelated function before each of its top-level statements."""
    lines = text.splitlines(keepends=True)
    tree = ast.parse(text)
    starts = {
        min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
        for node in tree.body
    }
    out = []
    for number, line in enumerate(lines, start=1):
        if number in starts:
            out.append(FILLER.format(i=number))
        out.append(line)
    return "".join(out)


def sources() -> list[tuple[str, str]]:
    found = []
    paths = [path for case in load_cases() for path in sorted(case.directory.glob("*.py"))]
    paths += sorted((ROOT / "examples" / "project").rglob("*.py"))  # examples/broken is broken
    for path in paths:
        found.append((str(path.relative_to(ROOT)), path.read_text(encoding="utf-8")))
    return found


SOURCES = sources()


@pytest.mark.parametrize("text", [text for _, text in SOURCES], ids=[name for name, _ in SOURCES])
def test_findings_are_the_same_with_and_without_the_slice(text: str) -> None:
    """Padded, the slice always leaves statements out (the fillers, and whatever the file
    holds that no rule reads) and maps its lines back across them: the file as it is, whose
    slice drops only the latter, would check a part of the same."""
    text = padded(text)
    assert check_text(text, RULES) == check_text(text, RULES, slicing=False)
