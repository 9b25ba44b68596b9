"""Lints the rules themselves (as refurb does): names, codes, docs, fixtures, generated docs."""

from __future__ import annotations

import inspect
import re
import subprocess
import sys
from pathlib import Path

import libcst as cst
import pytest

from jaxfix.models.sinks import Origin, Sink, SinkKind
from jaxfix.proofs.cases import fixtures_folder, load_cases
from jaxfix.report.docs import readme_with_table, rules_markdown
from jaxfix.rules.registry import all_rules
from jaxfix.rules.rule import Rule, visitor_names
from jaxfix.rules.rule_index import INDEX, index_text, rule_index

ROOT = Path(__file__).parent.parent
SECTIONS = [
    "What it does",
    "Why is this bad?",
    "Example",
    "Use instead",
    "Fix safety",
    "References",
]
RULES = all_rules()


def test_codes_and_names_are_unique() -> None:
    assert len({r.code for r in RULES}) == len(RULES)
    assert len({r.name for r in RULES}) == len(RULES)


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.code)
def test_rule_metadata(rule: type[Rule]) -> None:
    assert re.fullmatch(r"JF\d{3}", rule.code)
    assert re.fullmatch(r"[a-z]+(-[a-z]+)+", rule.name)
    module = sys.modules[rule.__module__].__name__.rsplit(".", 1)[1]
    assert module == rule.name.replace("-", "_"), "one module per rule, named after it"
    assert rule.anchors or rule.engine_implemented, "a rule needs anchors for the first pass"
    assert rule.fix_title[0].isupper() and not rule.fix_title.endswith(".")
    assert rule.summary[0].isupper() and not rule.summary.endswith(".")
    assert "\n" not in rule.summary and len(rule.summary) <= 80


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.code)
def test_docstring_has_every_section_in_order_and_examples_parse(rule: type[Rule]) -> None:
    doc = rule.__doc__ or ""
    headings = re.findall(r"^\s*## (.+)$", doc, flags=re.MULTILINE)
    assert headings == SECTIONS
    examples = re.findall(r"```python\n(.*?)```", doc, flags=re.DOTALL)
    assert len(examples) >= 2
    for example in examples:
        cst.parse_module(re.sub(r"^ {4}", "", example, flags=re.MULTILINE))


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.code)
def test_every_rule_has_enough_fixtures_with_lookalikes(rule: type[Rule]) -> None:
    module = rule.name.replace("-", "_")
    cases = [c for c in load_cases() if c.rule == module]
    assert len(cases) >= 8
    assert any(not c.codes for c in cases), "a rule needs look-alikes that must stay untouched"
    # A suppression rule's cases also hold the findings they suppress or leave.
    allowed = {r.code for r in RULES} if rule.engine_implemented else {rule.code}
    assert all(set(c.codes) <= allowed for c in cases)
    assert any(rule.code in c.codes for c in cases)
    if rule.fix_safety is not None:
        assert any(c.fixed for c in cases)


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.code)
def test_the_rule_table_says_which_findings_have_no_fix_exactly_when_a_fixture_shows_one(
    rule: type[Rule],
) -> None:
    module = rule.name.replace("-", "_")
    cases = [c for c in load_cases() if c.rule == module]
    unfixed = [c.id for c in cases if rule.code in c.codes and not c.fixed]
    assert bool(rule.unfixed) == bool(unfixed) or rule.fix_safety is None, unfixed
    assert not rule.unfixed.endswith("."), "a table cell"


def test_every_fixture_folder_belongs_to_a_rule() -> None:
    modules = {r.name.replace("-", "_") for r in RULES}
    folders = {d.name for d in fixtures_folder().iterdir() if d.is_dir()}
    assert {name for name in folders if not name.startswith("_")} <= modules


def test_generated_docs_are_current() -> None:
    assert (ROOT / "docs" / "rules.md").read_text() == rules_markdown(), (
        "run `python -m jaxfix.report.docs`"
    )
    readme = (ROOT / "README.md").read_text()
    assert readme_with_table(readme) == readme, "run `python -m jaxfix.report.docs`"


def test_the_rule_index_is_current() -> None:
    """The entries the run stack selects and slices with, without importing the rules."""
    assert INDEX.read_text(encoding="utf-8") == index_text(RULES), (
        "run `python -m jaxfix.rules.registry`"
    )
    assert [info.load() for info in rule_index()] == list(RULES)


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.code)
def test_every_rule_module_exposes_its_libcst_command(rule: type[Rule]) -> None:
    import pickle

    from libcst.codemod import CodemodCommand

    module = sys.modules[rule.__module__]
    name = f"{rule.__name__}Command"
    command = getattr(module, name)
    assert issubclass(command, CodemodCommand) and name in dir(module)
    assert (command.__module__, command.__qualname__) == (rule.__module__, name)
    assert pickle.loads(pickle.dumps(command)) is command, "libcst.tool's workers need it"
    assert command.DESCRIPTION.startswith(f"{rule.code} {rule.name}: {rule.summary}. ")


@pytest.mark.parametrize("rule", all_rules(), ids=lambda rule: rule.code)
def test_visitor_methods_are_those_libcst_would_find(rule: type[Rule]) -> None:
    """`Rule.get_visitors` answers from the class (LibCST asks `inspect.getmembers` of every
    instance on every traversal): the same methods, without LibCST's empty stubs."""
    found = {
        name
        for name, member in inspect.getmembers(rule, inspect.isfunction)
        if name.startswith(("visit_", "leave_")) and not getattr(member, "_is_no_op", False)
    }
    assert set(visitor_names(rule)) == found


# The run stack: configuration, workers, cache, engine, the codemod-command integration.
RUN_STACK = (
    "jaxfix.run.batch",
    "jaxfix.run.config",
    "jaxfix.run.engine",
    "jaxfix.run.runner",
    "jaxfix.run.cache",
)


def test_rules_sit_below_the_engine_and_the_run_stack() -> None:
    """Importing every rule imports none of the run stack (a fresh interpreter: this one has
    imported everything)."""
    program = (
        "import sys; from jaxfix.rules.registry import all_rules; all_rules(); "
        f"print([m for m in {RUN_STACK!r} + ('jaxfix.run.libcst_command',) if m in sys.modules])"
    )
    result = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "[]"


def test_a_rule_module_still_exposes_its_codemod_command() -> None:
    from jaxfix.codemods import serialize_in_traced

    assert "SerializeInTracedCommand" in dir(serialize_in_traced)
    command = serialize_in_traced.SerializeInTracedCommand
    assert command.__name__ == "SerializeInTracedCommand"


def test_every_sink_kind_is_owned_by_exactly_one_rule() -> None:
    owners = {kind: [rule.code for rule in RULES if kind in rule.kinds()] for kind in SinkKind}
    assert all(len(codes) == 1 for codes in owners.values()), owners


@pytest.mark.parametrize("rule", [r for r in RULES if r.sinks], ids=lambda r: r.code)
def test_sink_rows_are_full_names_listed_once(rule: type[Rule]) -> None:
    # A constructor has a row per argument its methods write: each method in one row.
    keys = [(row.kind, row.callable, method) for row in rule.sinks for method in _methods(row)]
    assert len(set(keys)) == len(keys)
    assert all("." in row.callable and row.origin is Origin.BUILT_IN for row in rule.sinks)


def _methods(row: Sink) -> list[str]:
    """The writing methods a checkpointer row names (its detail), else one key for the row."""
    return row.detail.split() if row.kind is SinkKind.CHECKPOINTER else [""]
