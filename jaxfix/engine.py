"""Check and fix one source text: a cheap first pass (CPython's parser and the candidate pass)
cuts out the statements a rule can depend on; LibCST parses only those, and every selected rule
runs in one batched traversal; suppression comments then silence what they name. Fixing parses
the whole file (only when a fix applies), applies non-overlapping fixes, re-parses, and repeats
until nothing changes.

Pure functions of text and settings (no I/O), so that the CLI, the language server and worker
processes can all call them.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from jaxfix import candidates, firstpass, suppression
from jaxfix.analysis.file import FileAnalysis, analyse_file
from jaxfix.analysis.flow import Bindings
from jaxfix.diagnostic import Diagnostic, TextEdit
from jaxfix.edits import EditsWanted, line_edits
from jaxfix.imports import add_imports, has_docstring
from jaxfix.metadata import Wrapper
from jaxfix.options import DEFAULT, Options
from jaxfix.project import ModuleFacts, Place, ProjectContext, note_top_level, traced_calls
from jaxfix.registry import all_rules, matches
from jaxfix.rule import Fix, Replacement, Rule
from jaxfix.syntax import ReplaceNodes
from jaxfix.tracing import OutsideSlice, TracedAnalysis
from jaxfix.transforms import TransformSpec, with_user_transforms
from jaxfix.traversal import visit_batched

MAX_FIX_PASSES = 10

# No rule can fire in a file that never mentions jax or a framework built on it (whose
# transforms trace too): such files are only parsed by CPython, so that a syntax error is
# reported in every file (as Ruff does), and never analysed.
PREFILTER = ("jax", "equinox", "flax", "haiku", "optax")
_WORD = re.compile(r"\w+")


class FixError(Exception):
    """A fix produced code that does not parse or compile, or did not converge."""


@dataclass
class Result:
    """What checking (and possibly fixing) one source text found."""

    diagnostics: list[Diagnostic]  # findings remaining in `text`
    text: str  # the text after the fixes (the input when nothing was fixed)
    fixed: list[Diagnostic] = field(default_factory=list)  # findings whose fix was applied


@dataclass(frozen=True)
class _Checked:
    """One run of the rules over a slice: its fixes refer to `wrapper`'s nodes."""

    piece: firstpass.Slice
    wrapper: MetadataWrapper
    found: list[Diagnostic]  # in the slice's line numbers


@dataclass(frozen=True)
class _Selection:
    """The file's syntax tree and the top-level statements a finding can be in (all when
    `seeds` is None), with what they bind and read."""

    tree: ast.Module
    analysed: FileAnalysis
    seeds: set[int] | None = None
    bindings: Sequence[Bindings] = ()
    users_of: set[int] = field(default_factory=set)  # seeds whose users the rules read
    script: bool = False  # the rules read the module's top-level code (`relevant_slice`)
    checked: _Checked | None = None  # the rules' run over the slice, when they ran

    def around(self, lines: Collection[int]) -> _Selection:
        """Only the seeds that span one of `lines`."""
        if self.seeds is None:
            return self
        spans = {i: firstpass.lines_of(self.tree.body[i]) for i in self.seeds}
        seeds = {i for i, (first, last) in spans.items() if any(first <= n <= last for n in lines)}
        return dataclasses.replace(self, seeds=seeds, users_of=self.users_of & seeds)

    def slice(self, text: str, for_fixes: Collection[str] | None = None) -> firstpass.Slice | None:
        """The part of `text` the rules depend on (see `firstpass.relevant_slice`)."""
        return firstpass.relevant_slice(
            text,
            self.tree,
            self.seeds,
            self.bindings,
            users_of=self.users_of,
            for_fixes=for_fixes,
            script=self.script,
        )


def applicable_rules(
    text: str, rules: Sequence[type[Rule]], options: Options = DEFAULT
) -> list[type[Rule]]:
    """The rules that could fire in `text`, judged by a cheap substring test: the text must
    mention jax, a JAX framework or a transform of the project (or be traced from another
    module), and one of the rule's anchors."""
    aware = [rule for rule in rules if rule.project_aware] if options.serialized_imports else []
    if not _may_trace(text, options):
        return aware
    return [*aware, *(r for r in _anchored_rules(text, rules, options) if r not in aware)]


def _may_trace(text: str, options: Options) -> bool:
    return (
        any(word in text for word in PREFILTER)
        or bool(options.entries)
        or any(_last_name(transform) in text for transform in options.transforms)
    )


def _last_name(dotted: str) -> str:
    return dotted.rsplit(".", 1)[-1]


def _anchored_rules(text: str, rules: Sequence[type[Rule]], options: Options) -> list[type[Rule]]:
    """The rules one of whose anchors `text` mentions (any text may store: `STORES`)."""
    mentioned = _words_in(text)
    return [
        rule
        for rule in rules
        if not rule.anchors
        or candidates.STORES in rule.anchors
        or _mentions(text, mentioned, *_words(_anchors(rule, options)))
    ]


@functools.lru_cache(maxsize=2)
def _words_in(text: str) -> frozenset[str]:
    """The words of `text`, read once for every rule's anchors (up to a thousand) and for
    both gates a check asks (`applicable_rules`, `_follows_calls`)."""
    return frozenset(_WORD.findall(text))


def _mentions(
    text: str, mentioned: frozenset[str], names: frozenset[str], fragments: frozenset[str]
) -> bool:
    """Whether `text` names one of `names` (one of its `mentioned` words) or holds one of
    `fragments`."""
    return not names.isdisjoint(mentioned) or any(part in text for part in fragments)


def _anchors(rule: type[Rule], options: Options) -> frozenset[str]:
    return rule.anchors_with(options.sinks)


@functools.cache
def _words(anchors: frozenset[str]) -> tuple[frozenset[str], frozenset[str]]:
    """What the text of a file where a rule fires must contain: one of its anchors' last
    names, as a word, or, for an anchor that stands for syntax, one of the fragments that
    syntax needs (`{`, `static_arg` of `static_argnums`)."""
    names = frozenset(
        _last_name(anchor) for anchor in anchors if anchor not in candidates.SYNTAX_ANCHORS
    )
    fragments = frozenset(
        part for anchor in anchors for part in candidates.SYNTAX_ANCHORS.get(anchor, ())
    )
    return names, fragments


def check_text(
    text: str,
    rules: Sequence[type[Rule]],
    *,
    filename: str = "<unknown>",
    options: Options = DEFAULT,
    edits: EditsWanted = False,
    slicing: bool = True,
    place: Place | None = None,
    facts: ModuleFacts | None = None,
) -> list[Diagnostic]:
    """Findings of `rules` in `text`, less the suppressed ones; with `edits`, each fixable
    finding (each one starting on one of the lines `edits`, when a set: a fix costs a LibCST
    parse) carries its fix as text edits. Raises `firstpass.InvalidSource` when CPython
    rejects the text, `libcst.ParserSyntaxError` when LibCST does. `slicing=False` analyses the
    whole file (the same findings, slower: for tests of the first pass). With `place` (where
    the file sits in the run), what it tells the run of the calls into the run's packages
    (`options.packages`) is added to `facts`."""
    tree = _parse(text, filename, options, place, facts)
    active = applicable_rules(text, _analysers(rules), options)
    follow = _follows_calls(text, rules, options, place, facts)
    if not active and follow is None:
        return _unsuppressed(text, [], rules)
    # Cut out as fixes need it, the rules' run can give the edits too (see `_with_edits`).
    found, selection = _check(text, tree, active, options, slicing, follow, bool(edits))
    diagnostics = _fixable(_unsuppressed(text, found, rules), options)
    lines = None if edits is True else edits or frozenset()
    if any(d.fix_safety is not None and (lines is None or d.line in lines) for d in diagnostics):
        if lines is not None:
            selection = selection.around(lines)
        diagnostics = _with_edits(text, selection, diagnostics, active, filename, options, lines)
    return diagnostics


def fix_text(
    text: str,
    rules: Sequence[type[Rule]],
    *,
    unsafe_fixes: bool = False,
    filename: str = "<unknown>",
    options: Options = DEFAULT,
    place: Place | None = None,
    facts: ModuleFacts | None = None,
) -> Result:
    """Apply every allowed fix of an unsuppressed finding until none is left. Raises `FixError`
    (the input untouched) when a fix breaks the code or the fixes do not converge, and what
    `check_text` raises on a text it rejects. `place` and `facts` as for `check_text` (those of
    the text before the fixes)."""
    tree = _parse(text, filename, options, place, facts)
    active = applicable_rules(text, _analysers(rules), options)
    follow = _follows_calls(text, rules, options, place, facts)
    if not active and follow is None:
        return Result(_unsuppressed(text, [], rules), text)
    found, selection = _check(text, tree, active, options, follow=follow)
    diagnostics = _fixable(_unsuppressed(text, found, rules), options)
    if not any(d.fix is not None and _allowed(d.fix, unsafe_fixes) for d in diagnostics):
        return Result(diagnostics, text)
    firstpass.check_depth(selection.tree.body)  # the whole file is parsed now, not only the slice
    fixed: list[Diagnostic] = []
    codes: list[str] = []
    wrapper = _wrapped(text)
    analysed: FileAnalysis | None = selection.analysed  # of `text`; each fixed text anew
    for _ in range(MAX_FIX_PASSES):
        found = _run(wrapper, active, options, None, analysed)
        code = wrapper.module.code
        diagnostics = _fixable(_unsuppressed(code, found, rules), options)
        fixes = [d.fix for d in diagnostics if d.fix is not None and _allowed(d.fix, unsafe_fixes)]
        if not fixes:
            return Result(diagnostics, code, fixed)
        chosen = _non_overlapping(wrapper, fixes)
        new_code = _apply(wrapper, chosen, options.packages)
        codes = sorted({d.code for d in diagnostics if d.fix in chosen})
        wrapper = Wrapper(_reparse(new_code, filename, codes), unsafe_skip_copy=True)
        analysed = None
        fixed.extend(d for d in diagnostics if d.fix is not None and _contains(chosen, d.fix))
    raise FixError(f"fixes for {', '.join(codes)} did not converge after {MAX_FIX_PASSES} passes")


def _with_edits(
    text: str,
    selection: _Selection,
    diagnostics: list[Diagnostic],
    rules: Sequence[type[Rule]],
    filename: str,
    options: Options,
    lines: Collection[int] | None = None,
) -> list[Diagnostic]:
    """`diagnostics` with each fix (of a finding on one of `lines`, when given) as text edits
    of the file, the fixes applied one at a time. They are applied to a slice that holds what
    they change and what decides their import changes (every import, every use of a name a fix
    stops using): the whole file's edits, at the cost of a slice."""
    wanted = [d for d in diagnostics if d.fix and (lines is None or d.line in lines)]
    dropped = {name for d in wanted if d.fix for name in _names_in(d.fix.removed_nodes)}
    piece = selection.slice(text, for_fixes=dropped)
    assert piece is not None, "a finding implies a statement to slice"
    checked = selection.checked
    if checked is None or checked.piece.text != piece.text:  # else the check saw this slice
        checked = _run_on(text, piece, rules, options, None, selection.analysed)
    piece, found, wrapper = checked.piece, checked.found, checked.wrapper
    fixes = {_place(_in_file(d, piece)): d.fix for d in found if d.fix is not None}
    result: list[Diagnostic] = []
    for diagnostic in diagnostics:
        fix = fixes.get(_place(diagnostic))
        wanted_here = lines is None or diagnostic.line in lines
        if diagnostic.fix_safety is not None and fix is not None and wanted_here:
            new_code = _apply(wrapper, [fix], options.packages)
            _reparse(new_code, filename, [diagnostic.code])
            edits = [_edit_in_file(e, piece) for e in line_edits(piece.text, new_code)]
            diagnostic = dataclasses.replace(diagnostic, edits=tuple(edits))
        result.append(diagnostic)
    return result


def _names_in(nodes: Iterable[cst.CSTNode]) -> set[str]:
    """The names (and attribute roots) written in `nodes`."""
    found: set[str] = set()

    class _Names(cst.CSTVisitor):
        def visit_Name(self, node: cst.Name) -> None:
            found.add(node.value)

        def visit_Attribute(self, node: cst.Attribute) -> bool:
            node.value.visit(self)  # `a.b`: only `a` is a name
            return False

    for node in nodes:
        node.visit(_Names())
    return found


def _in_file(d: Diagnostic, piece: firstpass.Slice) -> Diagnostic:
    """A finding of the slice at its place in the file."""
    if piece.whole:
        return d
    return dataclasses.replace(
        d, line=piece.file_line(d.line), end_line=piece.file_line(d.end_line)
    )


def _edit_in_file(edit: TextEdit, piece: firstpass.Slice) -> TextEdit:
    """A whole-line edit of the slice as an edit of the file: a line the edit starts at maps to
    its line in the file; an insertion goes right after the slice line before it (where the
    file has it), and an edit ending at the start of a line ends after the line before it."""
    if piece.whole:
        return edit
    if edit.line == edit.end_line and edit.column == edit.end_column == 0 and edit.line > 1:
        line = end_line = piece.file_line(edit.line - 1) + 1
    else:
        line = piece.file_line(edit.line)
        end_line = (
            piece.file_line(edit.end_line - 1) + 1
            if edit.end_column == 0
            else piece.file_line(edit.end_line)
        )
    return dataclasses.replace(edit, line=line, end_line=end_line)


def _place(d: Diagnostic) -> tuple[str, int, int, int, int, str]:
    return (d.code, d.line, d.column, d.end_line, d.end_column, d.message)


def _fixable(diagnostics: list[Diagnostic], options: Options) -> list[Diagnostic]:
    """Findings of the rules the project does not let jaxfix fix lose their fix."""
    if options.fixable is None and not options.unfixable:
        return diagnostics
    allowed = {
        rule.code
        for rule in all_rules()
        if (options.fixable is None or matches(rule, options.fixable))
        and not matches(rule, options.unfixable)
    }
    return [
        d
        if d.code in allowed
        else dataclasses.replace(d, fix=None, fix_title=None, fix_safety=None)
        for d in diagnostics
    ]


def _analysers(rules: Sequence[type[Rule]]) -> list[type[Rule]]:
    return [rule for rule in rules if not rule.engine_implemented]


def _unsuppressed(
    text: str, diagnostics: list[Diagnostic], rules: Sequence[type[Rule]]
) -> list[Diagnostic]:
    """`diagnostics` less those a suppression comment silences, plus the unused suppressions
    when JF001 is selected."""
    found = suppression.find(text)
    if not found:
        return diagnostics
    known = {key: rule.code for rule in all_rules() for key in (rule.code, rule.name)}
    active = {rule.code for rule in _analysers(rules)}
    report = any(rule.code == suppression.UNUSED_CODE for rule in rules)
    return suppression.apply(diagnostics, found, known, active, report)


@dataclass(frozen=True)
class _FollowCalls:
    """Where the file sits, and what it tells the run of its calls into other modules."""

    place: Place
    facts: ModuleFacts
    anchors: frozenset[str]  # of the rules the text mentions an anchor of, jax or not


def _follows_calls(
    text: str,
    rules: Sequence[type[Rule]],
    options: Options,
    place: Place | None,
    facts: ModuleFacts | None,
) -> _FollowCalls | None:
    """What to note the file's functions and calls into other modules with, when it names a
    package of the run or an anchor of a rule (cheap substring tests)."""
    if place is None or facts is None or not options.packages:
        return None
    mentioned = _anchored_rules(text, _analysers(rules), options)
    calls = (
        any(word in text for word in PREFILTER)
        or "from ." in text
        or any(package in text for package in options.packages)
    )
    if not mentioned and not calls:
        return None
    anchors = frozenset().union(*(_anchors(rule, options) for rule in mentioned))
    return _FollowCalls(place, facts, anchors)


@functools.lru_cache(maxsize=1)
def _parsed(text: str, filename: str) -> ast.Module:
    """CPython's tree of `text`, kept for the next analysis of the same text: a file that
    other modules' traced code calls is analysed again in each round of tracing across modules
    (see `jaxfix.batch`), and nothing changes the tree."""
    return firstpass.parse(text, filename)


def _parse(
    text: str,
    filename: str,
    options: Options,
    place: Place | None,
    facts: ModuleFacts | None,
) -> ast.Module:
    """CPython's tree of `text` (a syntax error is reported in every file, whatever the rules);
    in a run over packages, its top level noted in `facts` for the other modules' calls."""
    tree = _parsed(text, filename)
    if place is not None and facts is not None and options.packages:
        note_top_level(tree, facts)
    return tree


def _check(
    text: str,
    tree: ast.Module,
    rules: Sequence[type[Rule]],
    options: Options,
    slicing: bool = True,
    follow: _FollowCalls | None = None,
    for_fixes: bool = False,
) -> tuple[list[Diagnostic], _Selection]:
    """Findings in the slice of `text` the rules depend on, in the file's line numbers (none,
    without LibCST, when the first pass rules them out). Their fixes refer to the slice's syntax
    tree: only `fix_text` applies fixes, on the whole file. `slicing=False` analyses it all;
    `for_fixes` cuts the slice as fixes need it (`firstpass.relevant_slice`). With `follow`, the
    calls traced code makes into the run's packages are added to `follow.calls_out` (from the
    analysis, without LibCST)."""
    try:
        analysed = analyse_file(tree, text, _transforms(options), options.entries)
    except RecursionError:
        firstpass.check_depth(tree.body)  # says where the code is too deep to analyse
        raise
    selection = _Selection(tree, analysed)
    # Call sites of other files' functions can be anywhere: the whole file is analysed.
    sliced = slicing and all(rule.anchors for rule in rules) and not options.serialized_imports
    if sliced or follow is not None:
        everything = follow is not None or not all(rule.traced_only for rule in rules)
        found = candidates.collect(tree, analysed, _transforms(options), everything)
    if follow is not None:
        _note_facts(tree, found, options.packages, follow)
        if options.follow:
            calls = traced_calls(analysed, follow.place, options.packages)
            follow.facts.calls_out.extend(calls)
    if sliced:
        by_rule = {
            rule: found.statements(
                _anchors(rule, options),
                rule.traced_only,
                rule.anchors_receive_traced,
                rule.run_time_anchors,
                rule.sure_tracer_anchors,
            )
            for rule in rules
        }
        rules = [rule for rule in rules if by_rule[rule]]
        seeds = set().union(*by_rule.values())
        users_of = set().union(*(by_rule[rule] for rule in rules if rule.reads_users))
        script = any(by_rule[rule] for rule in rules if rule.reads_after_calls)
        selection = _Selection(tree, analysed, seeds, found.bindings, users_of, script)
    if not rules:
        return [], selection
    piece = selection.slice(text, for_fixes=() if for_fixes else None)
    if piece is None:
        return [], selection
    facts = follow.facts if follow is not None else None
    checked = _run_on(text, piece, rules, options, facts, analysed)
    piece, diagnostics = checked.piece, checked.found
    return [_in_file(d, piece) for d in diagnostics], dataclasses.replace(
        selection, checked=checked
    )


def _note_facts(
    tree: ast.Module,
    found: candidates.Candidates,
    packages: Collection[str],
    follow: _FollowCalls,
) -> None:
    """What CPython's tree tells of the file's functions and their calls into the run."""
    facts, place = follow.facts, follow.place
    named = {
        index: statement.name
        for index, statement in enumerate(tree.body)
        if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef)
    }
    if follow.anchors:
        statements = found.statements(follow.anchors, traced_only=False)
        facts.anchored.update(named[i] for i in statements if i in named)
    facts.wrappers.update(found.wrappers(tree))
    facts.imported.update((raw, place.absolute(raw)) for raw in found.project_imports(packages))
    facts.decorators.update(found.project_decorators(packages))
    for call, name in found.project_calls(packages):
        if call.statement in named:
            facts.calls.add((named[call.statement], place.absolute(name)))


def _run_on(
    text: str,
    piece: firstpass.Slice,
    rules: Sequence[type[Rule]],
    options: Options,
    facts: ModuleFacts | None,
    analysed: FileAnalysis,
) -> _Checked:
    """The rules' run over `piece` of `text`, or over the whole file when the analysis needs a
    statement the slice left out (the same findings a whole-file run gives, in every case)."""
    published = facts.published() if facts is not None else None
    try:
        wrapper = _wrapped(piece.text)
        found = _run(wrapper, rules, options, facts, analysed, piece.file_line)
    except OutsideSlice:
        if piece.whole:
            raise
        if facts is not None and published is not None:
            facts.forget_since(published)
        return _run_on(text, firstpass.Slice(text, whole=True), rules, options, facts, analysed)
    return _Checked(piece, wrapper, found)


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


def _wrapped(text: str) -> Wrapper:
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


def _run(
    wrapper: Wrapper,
    rules: Sequence[type[Rule]],
    options: Options,
    facts: ModuleFacts | None = None,
    analysed: FileAnalysis | None = None,
    line_of: Callable[[int], int] | None = None,
) -> list[Diagnostic]:
    """Run `rules` over `wrapper`'s module; what they note for the rest of the run goes to
    `facts`. `analysed` is the analysis of the file the module is (a slice of, its lines
    mapped to the file's by `line_of`); without it, the module is analysed."""
    project = ProjectContext(
        bool(options.packages), options.serialized_imports, options.foreign_calls, facts
    )
    analysis = TracedAnalysis(
        wrapper, _transforms(options), options.entries, project, analysed, line_of
    )
    analysis.plan_waits = options.plan_waits
    instances = [
        rule(analysis, options.for_rule(rule.code, rule.name), options.sinks) for rule in rules
    ]
    visit_batched(wrapper, instances)
    diagnostics = [d for rule in instances for d in rule.diagnostics]
    diagnostics.sort(key=lambda d: (d.line, d.column, d.code))
    return diagnostics


def _transforms(options: Options) -> Mapping[str, TransformSpec]:
    return with_user_transforms(options.transforms)


def _allowed(fix: Fix, unsafe_fixes: bool) -> bool:
    return fix.safety.applies(unsafe_fixes)


def _contains(fixes: Iterable[Fix], fix: Fix) -> bool:
    return any(fix is chosen for chosen in fixes)


def _non_overlapping(wrapper: MetadataWrapper, fixes: Sequence[Fix]) -> list[Fix]:
    """The first fixes, in source order, whose edited ranges do not overlap an earlier one."""
    positions = wrapper.resolve(PositionProvider)
    taken: list[tuple[tuple[int, int], tuple[int, int]]] = []
    chosen: list[Fix] = []
    for fix in fixes:
        if _contains(chosen, fix):
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


def prepare_fixes() -> None:
    """Import what applying a fix needs (half a second), ahead of the first fix: for a
    long-running process (the language server), while nobody waits."""
    import jaxfix.unused_imports  # noqa: F401


def _apply(
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
    used = _names_in(node for fix in fixes for node in fix.removed_nodes)
    if used:
        # Imported here: `libcst.codemod` pulls in `libcst.matchers` (half a second).
        from jaxfix.unused_imports import names_in_use, remove_unused_imports

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
    old = [before.code_for_node(statement) for statement in before.body]
    new = [after.code_for_node(statement) for statement in after.body]
    index = next((i for i, (a, b) in enumerate(zip(old, new, strict=False)) if a != b), None)
    if index is None or old[index + 1 : index + 2] != new[index : index + 1]:
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


def _reparse(code: str, filename: str, codes: Sequence[str]) -> cst.Module:
    try:
        compile(code, filename, "exec", dont_inherit=True)
        return cst.parse_module(code)
    except (SyntaxError, ValueError, cst.ParserSyntaxError) as error:
        raise FixError(f"fix for {', '.join(codes)} produced invalid code: {error}") from error
