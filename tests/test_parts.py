"""A later round across modules analyses only the part of a file its entries need
(`jaxfix.models.parts`): which statements the part keeps, its text, and that the engine analyses the
whole file when the part finds something."""

from __future__ import annotations

import ast
import json
import textwrap
from dataclasses import replace

from jaxfix.analysis import firstpass
from jaxfix.analysis.declarations import whole_module
from jaxfix.analysis.flow import analyse
from jaxfix.analysis.project import Entry, ModuleFacts, Place
from jaxfix.models.parts import Outline, Part
from jaxfix.rules.registry import all_rules
from jaxfix.run.engine import check_text
from jaxfix.run.options import Options

MODULE = textwrap.dedent(
    """\
    import pickle

    import jax

    SCALE = 2.0
    UNUSED = 3.0


    def helper(x):
        return x * SCALE


    def entered(x):
        return helper(x)


    def unrelated(x):
        return pickle.dumps(x)


    @jax.custom_jvp
    def smooth(x):
        return x


    @smooth.defjvp
    def smooth_jvp(primals, tangents):
        return primals, tangents


    alias = smooth
    """
)


def outline_of(text: str) -> Outline:
    tree = ast.parse(text)
    module = analyse(tree)
    names = {s.name for s in tree.body if isinstance(s, ast.FunctionDef)}
    return firstpass.outline(tree, module.statement_names, names, whole_module(module))


def kept_lines(text: str, part: Part | None) -> list[str]:
    """The non-blank lines the part keeps."""
    assert part is not None
    cut = part.text(text)
    assert cut.count("\n") == text.count("\n")  # the file's own line numbers
    return [line for line in cut.splitlines() if line]


def test_a_part_keeps_the_entered_function_what_it_reads_and_the_imports() -> None:
    kept = kept_lines(MODULE, outline_of(MODULE).part(["entered"]))
    assert kept == [
        "import pickle",
        "import jax",
        "SCALE = 2.0",
        "def helper(x):",
        "    return x * SCALE",
        "def entered(x):",
        "    return helper(x)",
    ]


def test_a_part_keeps_what_uses_an_entered_definition_at_the_top_level() -> None:
    """`@smooth.defjvp` and `alias = smooth` are read with `smooth`: its rule is traced with it."""
    kept = kept_lines(MODULE, outline_of(MODULE).part(["smooth"]))
    assert "def smooth_jvp(primals, tangents):" in kept
    assert "alias = smooth" in kept
    assert "def helper(x):" not in kept and "def unrelated(x):" not in kept


def test_a_part_that_is_the_whole_file_is_none() -> None:
    every = ["helper", "entered", "unrelated", "smooth", "smooth_jvp"]
    assert outline_of("import jax\n\n\ndef f(x):\n    return x\n").part(["f"]) is None
    assert outline_of(MODULE).part(every) is not None  # `UNUSED` is left out
    assert outline_of(MODULE.replace("UNUSED = 3.0\n", "")).part(every) is None


def test_a_part_keeps_the_class_its_parameters_are_given_instances_of() -> None:
    """`step`'s `model` is an `MLP` by every call of the module (`main`, not kept): the part keeps
    the class and is told so, as the analysis of the whole file knows it."""
    text = textwrap.dedent(
        """\
        class MLP:
            def apply(self, x):
                return x


        def step(model, x):
            return model.apply(x)


        def main(x):
            return step(MLP(), x)
        """
    )
    part = outline_of(text).part(["step"])
    assert part is not None
    assert kept_lines(text, part)[:2] == ["class MLP:", "    def apply(self, x):"]
    assert "def main(x):" not in kept_lines(text, part)
    assert part.whole.instance_params == (("step@6", (("model", "MLP"),)),)


def test_a_part_keeps_the_files_line_endings_and_columns() -> None:
    text = "import jax\r\n\r\nA = 1\r\n\r\n\r\ndef f(x):\r\n    return x\r\n"
    part = outline_of(text).part(["f"])
    assert part is not None
    assert part.text(text) == "import jax\r\n\n\n\n\ndef f(x):\r\n    return x\r\n"


def test_a_part_keeps_the_lines_of_its_spans() -> None:
    part = Part(((2, 3), (7, 7)))
    assert [line for line in range(1, 10) if part.keeps(line)] == [2, 3, 7]
    assert not Part(()).keeps(1)


def test_outlines_and_parts_read_back_from_plain_values() -> None:
    outline = outline_of(MODULE)
    assert Outline.from_plain(json.loads(json.dumps(outline.plain()))) == outline
    part = outline.part(["entered"])
    assert part is not None
    assert Part.from_plain(json.loads(json.dumps(part.plain()))) == part


SAVER = textwrap.dedent(
    """\
    import pickle

    import jax

    LOG = []


    def save(value):
        LOG.append(pickle.dumps(value))


    def scale(x):
        return x * 2


    @jax.jit
    def local(x):
        return x + 1
    """
)


def check(entries: tuple[Entry, ...], part: bool) -> tuple[list[str], ModuleFacts]:
    """Findings (`line CODE`) and facts of `SAVER` entered with `entries`, whole or in part."""
    outline = outline_of(SAVER)
    options = Options(packages=("pkg",), follow=True, entries=entries)
    if part:
        options = replace(options, part=outline.part(e.function for e in entries))
        assert options.part is not None
    facts = ModuleFacts()
    place = Place("pkg.io", "pkg")
    found = check_text(
        SAVER, all_rules(), filename="io.py", options=options, place=place, facts=facts
    )
    return [f"{d.line} {d.code}" for d in found], facts


def test_a_part_that_finds_something_is_analysed_whole() -> None:
    """The finding and its fix come from the whole file, as without the part."""
    entries = (Entry("save", (0,), reason="called from traced `pkg.train.step`"),)
    whole, _ = check(entries, part=False)
    assert whole == ["9 JF101"]
    found, facts = check(entries, part=True)
    assert found == whole
    assert not facts.partial and "local" in facts.functions


def test_a_part_that_finds_nothing_tells_its_facts_as_partial() -> None:
    entries = (Entry("scale", (0,), reason="called from traced `pkg.train.step`"),)
    assert check(entries, part=False)[0] == []
    found, facts = check(entries, part=True)
    assert found == []
    assert facts.partial
    assert facts.functions == {"scale"}  # the part's own: the run keeps the first round's
