"""The part of the engine that needs LibCST: the rules' run over LibCST's tree of a slice, and
applying fixes to it. `jaxfix.run.engine` imports it only when a file's first pass leaves a rule
something to look at, so that a run over files without candidates never imports LibCST.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from jaxfix.analysis import firstpass
from jaxfix.analysis.file import FileAnalysis
from jaxfix.analysis.project import ModuleFacts, ProjectContext
from jaxfix.fixes.fix import Fix, Replacement, ReplaceNodes
from jaxfix.fixes.imports import add_imports, has_docstring
from jaxfix.fixes.metadata import Wrapper
from jaxfix.fixes.tracing import OutsideSlice, TracedAnalysis
from jaxfix.fixes.traversal import visit_batched
from jaxfix.fixes.unused_imports import names_in_use, remove_unused_imports
from jaxfix.models.diagnostic import Diagnostic
from jaxfix.models.transforms import with_user_transforms
from jaxfix.rules.rule_index import RuleRef
from jaxfix.run.options import Options

# What a fixed text that does not parse raises (`parse_checked`).
INVALID = (SyntaxError, ValueError, cst.ParserSyntaxError)


@dataclass(frozen=True)
class Checked:
    """One run of the rules over a slice: its fixes refer to `wrapper`'s nodes."""

    piece: firstpass.Slice
    wrapper: MetadataWrapper
    found: list[Diagnostic]  # in the slice's line numbers


def run_on(
    text: str,
    piece: firstpass.Slice,
    rules: Sequence[RuleRef],
    options: Options,
    facts: ModuleFacts | None,
    analysed: FileAnalysis,
) -> Checked:
    """The rules' run over `piece` of `text`, or over the whole file when the analysis needs a
    statement the slice left out (the same findings a whole-file run gives, in every case)."""
    published = len(facts.return_changes) if facts is not None else None
    try:
        wrapper = wrapped(piece.text)
        found = run(wrapper, rules, options, facts, analysed, piece.file_line)
    except OutsideSlice:
        if piece.whole:
            raise
        if facts is not None and published is not None:
            facts.forget_since(published)
        return run_on(text, firstpass.Slice(text, whole=True), rules, options, facts, analysed)
    return Checked(piece, wrapper, found)


class _KeptTrees(threading.local):
    """The last LibCST trees parsed on this thread, by their text, with the metadata resolved
    on them since: the same text is often run again (`fix_text` after the check of a file its
    slice keeps whole, the language server's quick fixes after its diagnostics, a module in
    each round of tracing across modules), and its parse and metadata are half of a run.
    A kept tree takes about 250 times its text's size: the last one is always kept, the
    others while they are few and small."""

    def __init__(self) -> None:
        self.by_text: OrderedDict[str, Wrapper] = OrderedDict()
        self.characters = 0


KEPT_TREES = 8
KEPT_CHARACTERS = 128 * 1024
_kept = _KeptTrees()


def wrapped(text: str) -> Wrapper:
    """LibCST's module of `text` in a metadata wrapper (see `_KeptTrees`). Nothing changes a
    LibCST tree: fixes build new nodes, and the metadata is a function of the tree."""
    kept = _kept.by_text
    wrapper = kept.get(text)
    if wrapper is not None:
        kept.move_to_end(text)
        return wrapper
    wrapper = kept[text] = Wrapper(cst.parse_module(text), unsafe_skip_copy=True)
    _kept.characters += len(text)
    while len(kept) > 1 and (len(kept) > KEPT_TREES or _kept.characters > KEPT_CHARACTERS):
        _kept.characters -= len(kept.popitem(last=False)[0])
    return wrapper


def run(
    wrapper: Wrapper,
    rules: Sequence[RuleRef],
    options: Options,
    facts: ModuleFacts | None = None,
    analysed: FileAnalysis | None = None,
    line_of: Callable[[int], int] | None = None,
) -> list[Diagnostic]:
    """Run `rules` over `wrapper`'s module; what they note for the rest of the run goes to
    `facts`. `analysed` is the analysis of the file the module is (a slice of, its lines
    mapped to the file's by `line_of`); without it, the module is analysed."""
    project = ProjectContext(
        bool(options.packages), options.changed_imports, options.foreign_calls, facts
    )
    analysis = TracedAnalysis(
        wrapper,
        with_user_transforms(options.transforms, options.wrapped),
        options.entries,
        project,
        analysed,
        line_of,
    )
    analysis.plan_waits = options.plan_waits
    instances = [
        rule.load()(analysis, options.for_rule(rule.code, rule.name), options.sinks)
        for rule in rules
    ]
    visit_batched(wrapper, instances)
    for finish in analysis.finishing:
        finish()
    analysis.finishing.clear()  # they hold the analysis: no cycle left to the collector
    analysis.fix_plans.clear()
    diagnostics = [d for rule in instances for d in rule.diagnostics]
    diagnostics.sort(key=lambda d: (d.line, d.column, d.code))
    return diagnostics


def non_overlapping(wrapper: MetadataWrapper, fixes: Sequence[Fix]) -> list[Fix]:
    """The first fixes, in source order, whose edited ranges do not overlap an earlier one."""
    positions = wrapper.resolve(PositionProvider)
    taken: list[tuple[tuple[int, int], tuple[int, int]]] = []
    chosen: list[Fix] = []
    for fix in fixes:
        if contains(chosen, fix):
            continue
        spans = []
        for node in fix.replacements:
            span = positions[node]
            spans.append(((span.start.line, span.start.column), (span.end.line, span.end.column)))
        if any(a[0] < b[1] and b[0] < a[1] for a in spans for b in taken):
            continue
        taken.extend(spans)
        chosen.append(fix)
    return chosen


def apply_fixes(
    wrapper: MetadataWrapper, fixes: Sequence[Fix], first_party: Collection[str] = ()
) -> str:
    """The module's code with `fixes` applied and their imports added (where isort would put
    them, `first_party` being the project's packages) or removed."""
    replacements: dict[cst.CSTNode, Replacement] = {}
    for fix in fixes:
        replacements.update(fix.replacements)
    module = wrapper.module.visit(ReplaceNodes(replacements))
    module = add_imports(
        module, [needed for fix in fixes for needed in fix.imports_needed], first_party
    )
    used = names_in(node for fix in fixes for node in fix.removed_nodes)
    if used:
        gone = used - names_in_use(module.code)
        if gone:
            module = remove_unused_imports(module, gone)
    return _tidy_top(wrapper.module, module).code


def _tidy_top(before: cst.Module, after: cst.Module) -> cst.Module:
    """Keep the blank lines around a removed top-level statement where a person would: the
    blank lines above it stay above the statement that takes its place (when that one had
    none), and when it had none, the first statement of the file (or the first after the
    docstring) stays flush. Else what separated it from the next stays (the blank line
    between an import block and the code after it)."""
    pairs = zip(before.body, after.body, strict=False)
    index = next((i for i, (a, b) in enumerate(pairs) if not _same(before, a, after, b)), None)
    if (
        index is None
        or index + 1 >= len(before.body)
        or not _same(before, before.body[index + 1], after, after.body[index])
    ):
        return after  # the first difference is no removal
    removed, first = before.body[index], after.body[index]
    if any(line.comment for line in first.leading_lines):
        return after
    if removed.leading_lines:
        blank = [line for line in removed.leading_lines if line.comment is None]
        if first.leading_lines or not blank:
            return after
        leading: Sequence[cst.EmptyLine] = blank
    elif index == 0 or (index == 1 and has_docstring(before)):
        leading = ()
    else:
        return after
    body = list(after.body)
    body[index] = first.with_changes(leading_lines=leading)
    return after.with_changes(body=body)


def _same(before: cst.Module, old: cst.CSTNode, after: cst.Module, new: cst.CSTNode) -> bool:
    """Whether two statements read the same (fixes leave the statements they do not touch the
    same objects: only the others are written out)."""
    return old is new or before.code_for_node(old) == after.code_for_node(new)


def contains(fixes: Iterable[Fix], fix: Fix | None) -> bool:
    return any(fix is chosen for chosen in fixes)


def parse_checked(code: str, filename: str) -> Wrapper:
    """LibCST's module of a fixed text that CPython compiles (raises one of `INVALID`)."""
    compile(code, filename, "exec", dont_inherit=True)
    return Wrapper(cst.parse_module(code), unsafe_skip_copy=True)


def names_in(nodes: Iterable[cst.CSTNode]) -> set[str]:
    """The names (and attribute roots) written in `nodes`."""
    names = _Names()
    for node in nodes:
        node.visit(names)
    return names.found


class _Names(cst.CSTVisitor):
    """`names_in`'s visitor (at module level: a class made per call is a reference cycle)."""

    def __init__(self) -> None:
        super().__init__()
        self.found: set[str] = set()

    def visit_Name(self, node: cst.Name) -> None:
        self.found.add(node.value)

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        node.value.visit(self)  # `a.b`: only `a` is a name
        return False


def fix_of(diagnostic: Diagnostic) -> Fix | None:
    """The LibCST fix of a finding the rules made in this run (a finding from the cache or a
    worker has none)."""
    fix = diagnostic.fix
    assert fix is None or isinstance(fix, Fix), fix
    return fix
