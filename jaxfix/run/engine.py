"""One source text's road through jaxfix, `run_text`: a cheap first pass (CPython's parser, the
analysis and its candidate pass) cuts out the statements a rule can depend on; LibCST parses
only those, and every selected rule runs in one batched traversal (`jaxfix.run.cst_run`,
imported only then: a file the first pass clears never imports LibCST); suppression comments
then silence what they name. Fixing runs the rules over the whole file, applies non-overlapping
fixes, re-parses, and repeats until nothing changes.

A pure function of text and settings (no I/O): the CLI's workers, the language server, the
LibCST codemod commands, `jaxfix verify` and the tests all call it.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from jaxfix.analysis import candidates, candidates_read, firstpass
from jaxfix.analysis.declarations import whole_module
from jaxfix.analysis.file import FileAnalysis, analyse_file
from jaxfix.analysis.project import ModuleFacts, Place, note_top_level, traced_calls
from jaxfix.analysis.pytree_fields import class_use_names, top_level_static_classes
from jaxfix.analysis.summaries import Bindings
from jaxfix.models.diagnostic import AttachedFix, Diagnostic, TextEdit
from jaxfix.models.edits import EditsWanted, line_edits
from jaxfix.models.parts import Part
from jaxfix.models.sinks import Sink
from jaxfix.models.transforms import TransformSpec, Wrapped, with_user_transforms
from jaxfix.rules import suppression
from jaxfix.rules.registry import matches
from jaxfix.rules.rule_index import RuleRef, rule_index
from jaxfix.run.options import DEFAULT, Options

if TYPE_CHECKING:  # the rules' run and the fixes import LibCST: `jaxfix.run.cst_run`, when needed
    from jaxfix.fixes.metadata import Wrapper
    from jaxfix.run.cst_run import Checked

MAX_FIX_PASSES = 10

# No rule can fire in a file that never mentions jax or a framework built on it (whose
# transforms trace too): such files are only parsed by CPython, so that a syntax error is
# reported in every file (as Ruff does), and never analysed.
PREFILTER = ("jax", "equinox", "flax", "haiku", "optax")
# The smallest file whose later rounds analyse only the part they need (`jaxfix.models.parts`): a
# smaller one is analysed whole again in less time than its outline costs in the first round.
MIN_OUTLINED = 16_000
# Each byte that is no part of an ASCII word, as a space (see `_words_in`).
_NOT_WORD = bytes(
    byte if chr(byte).isascii() and (chr(byte).isalnum() or chr(byte) == "_") else 32
    for byte in range(256)
)


class FixError(Exception):
    """A fix produced code that does not parse or compile, or did not converge."""


@dataclass
class Result:
    """What checking (and possibly fixing) one source text found."""

    diagnostics: list[Diagnostic]  # findings remaining in `text`
    text: str  # the text after the fixes (the input when nothing was fixed)
    fixed: list[Diagnostic] = field(default_factory=list)  # findings whose fix was applied


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
    checked: Checked | None = None  # the rules' run over the slice, when they ran

    def around(self, lines: Collection[int]) -> _Selection:
        """Only the seeds that span one of `lines`."""
        if self.seeds is None:
            return self
        spans = {i: firstpass.lines_of(self.tree.body[i]) for i in self.seeds}
        seeds = {i for i, (first, last) in spans.items() if any(first <= n <= last for n in lines)}
        return dataclasses.replace(self, seeds=seeds, users_of=self.users_of & seeds)

    def slice(
        self, text: str, for_fixes: Collection[str] | None = None, whole: bool = False
    ) -> firstpass.Slice | None:
        """The part of `text` the rules depend on (see `firstpass.relevant_slice`); all of it,
        when `whole`."""
        return firstpass.relevant_slice(
            text,
            self.tree,
            None if whole else self.seeds,
            self.bindings,
            users_of=self.users_of,
            for_fixes=for_fixes,
            script=self.script,
        )


def applicable_rules(
    text: str, rules: Sequence[RuleRef], options: Options = DEFAULT
) -> list[RuleRef]:
    """The rules that could fire in `text`, judged by a cheap substring test: the text must
    mention jax, a JAX framework or a transform of the project (or be traced from another
    module), and one of the rule's anchors."""
    aware = [rule for rule in rules if rule.project_aware] if options.changed_imports else []
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


def _anchored_rules(text: str, rules: Sequence[RuleRef], options: Options) -> list[RuleRef]:
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
def _words_in(text: str) -> frozenset[bytes]:
    """The words of `text`, read once for every rule's anchors (up to a thousand) and for
    both gates a check asks (`applicable_rules`, `_follows_calls`): its bytes split at every
    byte that is no part of an ASCII word, in a third of the time a regular expression takes. A
    non-ASCII letter splits a word (`édumps` gives `dumps`): a word too many only lets the
    rules look at the file."""
    return frozenset(text.encode("utf-8", "surrogatepass").translate(_NOT_WORD).split())


def _mentions(
    text: str, mentioned: frozenset[bytes], names: frozenset[bytes], fragments: frozenset[str]
) -> bool:
    """Whether `text` names one of `names` (one of its `mentioned` words) or holds one of
    `fragments`."""
    return not names.isdisjoint(mentioned) or any(part in text for part in fragments)


def _anchors(rule: RuleRef, options: Options) -> frozenset[str]:
    return rule.anchors_with(options.sinks)


@functools.cache
def _words(anchors: frozenset[str]) -> tuple[frozenset[bytes], frozenset[str]]:
    """What the text of a file where a rule fires must contain: one of its anchors' last
    names, as a word, or, for an anchor that stands for syntax, one of the fragments that
    syntax needs (`{`, `static_arg` of `static_argnums`)."""
    names = frozenset(
        _last_name(anchor).encode() for anchor in anchors if anchor not in candidates.SYNTAX_ANCHORS
    )
    fragments = frozenset(
        part for anchor in anchors for part in candidates.SYNTAX_ANCHORS.get(anchor, ())
    )
    return names, fragments


def run_text(
    text: str,
    rules: Sequence[RuleRef],
    *,
    fix: bool = False,
    unsafe_fixes: bool = False,
    edits: EditsWanted = False,
    filename: str = "<unknown>",
    options: Options = DEFAULT,
    place: Place | None = None,
    facts: ModuleFacts | None = None,
    slicing: bool = True,
) -> Result:
    """The road of one file's text, once and in order: CPython's tree, the rules that could
    fire, the analysis and its candidates, the rules' run over LibCST's tree of the slice they
    depend on, the suppression comments and the project's fixability; then what is asked.

    - nothing more: the findings (`check_text`);
    - `edits`: each fixable finding carries its fix as text edits (a fix costs a LibCST
      parse); a set of lines asks for the findings starting on those lines only, an editor's
      quick fixes at its cursor, and the rules then look at the statements that hold them;
    - `fix`: every allowed fix (`unsafe_fixes` too) applied until none is left (`fix_text`).
      The rules' run is then over the whole file, whose tree the fixes edit; each fixed text
      runs the rules again.

    Raises `firstpass.InvalidSource` when CPython rejects the text, `libcst.ParserSyntaxError`
    when LibCST does, and `FixError` (nothing changed) when a fix breaks the code or the fixes
    do not converge. `slicing=False` analyses the whole file (the same findings, slower: for
    tests of the first pass). With `place` (where the file sits in the run), what it tells the
    run of the calls into the run's packages (`options.packages`) is added to `facts` (those of
    `text`, before any fix). With `options.part` and only findings asked, that part of the file
    alone is analysed when it finds nothing (see `jaxfix.models.parts`): a later round across
    modules, with new facts."""
    if options.part is not None:
        if not fix and _nothing_in_part(text, rules, filename, options, edits, place, facts):
            return Result([], text)
        options = dataclasses.replace(options, part=None)
    return _road(text, rules, filename, options, place, facts, slicing, edits, fix, unsafe_fixes)


def check_text(text: str, rules: Sequence[RuleRef], **settings: Any) -> list[Diagnostic]:
    """The findings of `rules` in `text` (`run_text`, asking for nothing more)."""
    return run_text(text, rules, **settings).diagnostics


def fix_text(text: str, rules: Sequence[RuleRef], **settings: Any) -> Result:
    """`text` with every allowed fix applied, and the findings left (`run_text` with `fix`)."""
    return run_text(text, rules, fix=True, **settings)


def _nothing_in_part(
    text: str,
    rules: Sequence[RuleRef],
    filename: str,
    options: Options,
    edits: EditsWanted,
    place: Place | None,
    facts: ModuleFacts | None,
) -> bool:
    """Whether `options.part` of `text` holds no finding and tells the run nothing that only
    the whole file can (a function whose return a fix changes, its callers' verdicts); then
    `facts` hold what the part tells (`partial`). False, leaving `facts` as they were, when the
    whole file must be analysed: the part finds something, or fixes are asked for."""
    assert options.part is not None
    if edits or options.changed_imports or options.foreign_calls:
        return False
    told = ModuleFacts(partial=True)
    part = options.part.text(text)
    tree = _part_tree(text, filename, options.part)
    checked = _road(part, rules, filename, options, place, told, True, False, False, False, tree)
    if checked.diagnostics or told.return_changes or told.call_sites:
        return False
    if facts is not None:
        for name in (f.name for f in dataclasses.fields(ModuleFacts)):
            setattr(facts, name, getattr(told, name))
    return True


def _road(
    text: str,
    rules: Sequence[RuleRef],
    filename: str,
    options: Options,
    place: Place | None,
    facts: ModuleFacts | None,
    slicing: bool,
    edits: EditsWanted,
    fix: bool,
    unsafe_fixes: bool,
    tree: ast.Module | None = None,
) -> Result:
    tree = _parse(text, filename, options, place, facts, tree)
    active = applicable_rules(text, _analysers(rules), options)
    follow = _follows_calls(text, rules, options, place, facts)
    lines = edits if isinstance(edits, frozenset) and edits else None  # empty: no edits
    if not active and follow is None:
        return Result(_on(lines, _unsuppressed(text, [], rules)), text)
    # Cut out as fixes need it, the rules' run can give the edits too (see `_with_edits`).
    found, selection = _check(
        text, tree, active, options, slicing, follow, bool(edits), lines, whole=fix
    )
    try:
        kept = _unsuppressed(text, found, rules)
        if options.own_fixes:
            _withhold(found, kept, facts, "a suppression comment withholds its fix")
        else:
            _withhold(found, [], facts, "its file is read for context, not fixed")
        diagnostics = _on(lines, _fixable(kept, options))
        if fix:
            return _fixed(
                text, selection, diagnostics, active, rules, filename, options, unsafe_fixes
            )
        if edits and any(d.fix_safety is not None for d in diagnostics):
            diagnostics = _with_edits(text, selection, diagnostics, active, filename, options)
        return Result(diagnostics, text)
    finally:  # the rules' run and the fixes' edits ask the analysis too
        if facts is not None:
            facts.static_queries.update(selection.analysed.facts.module.static_queries)


def _on(lines: Collection[int] | None, diagnostics: list[Diagnostic]) -> list[Diagnostic]:
    """The findings that start on one of `lines` (all, when None), or one of whose other
    places (`Diagnostic.related`) does."""
    if lines is None:
        return diagnostics
    return [d for d in diagnostics if d.line in lines or any(r in lines for r, _ in d.related)]


def _fixed(
    text: str,
    selection: _Selection,
    diagnostics: list[Diagnostic],
    active: Sequence[RuleRef],
    rules: Sequence[RuleRef],
    filename: str,
    options: Options,
    unsafe_fixes: bool,
) -> Result:
    """The text with the allowed fixes of `diagnostics` (found over the whole file) applied,
    non-overlapping ones together, and the rules run again over each fixed text until no
    allowed fix is left."""
    checked = selection.checked
    if checked is None:  # no rule had anything to look at
        return Result(diagnostics, text)
    from jaxfix.run import cst_run

    assert checked.piece.whole, "fixes edit the whole file's tree"
    # The text as it is, not LibCST's code of it: that drops blank lines at the end of a file.
    code, wrapper, fixed, codes = text, checked.wrapper, list[Diagnostic](), list[str]()
    for _ in range(MAX_FIX_PASSES):
        fixes = [f for f in map(cst_run.fix_of, diagnostics) if f and _allowed(f, unsafe_fixes)]
        if not fixes:
            return Result(diagnostics, code, fixed)
        chosen = cst_run.non_overlapping(wrapper, fixes)
        before, code = code, cst_run.apply_fixes(wrapper, chosen, options.packages)
        codes = sorted({d.code for d in diagnostics if d.fix in chosen})
        done = [d for d in diagnostics if cst_run.contains(chosen, cst_run.fix_of(d))]
        fixed.extend(done)
        if code == before and all(fix.moves for fix in chosen):
            # Fixes whose edits are all in other files (`Diagnostic.moves`): made there.
            return Result([d for d in diagnostics if d not in done], code, fixed)
        wrapper = _reparse(code, filename, codes)
        found = cst_run.run(wrapper, active, options)
        diagnostics = _fixable(_unsuppressed(code, found, rules), options)
    raise FixError(f"fixes for {', '.join(codes)} did not converge after {MAX_FIX_PASSES} passes")


def _with_edits(
    text: str,
    selection: _Selection,
    diagnostics: list[Diagnostic],
    rules: Sequence[RuleRef],
    filename: str,
    options: Options,
) -> list[Diagnostic]:
    """`diagnostics` with each fix as text edits of the file, the fixes applied one at a time.
    They are applied to a slice that holds what they change and what decides their import
    changes (every import, every use of a name a fix stops using): the whole file's edits, at
    the cost of a slice."""
    from jaxfix.run import cst_run

    removed = [fix.removed_nodes for fix in map(cst_run.fix_of, diagnostics) if fix is not None]
    dropped = {name for nodes in removed for name in cst_run.names_in(nodes)}
    piece = selection.slice(text, for_fixes=dropped)
    assert piece is not None, "a finding implies a statement to slice"
    checked = selection.checked
    if checked is None or checked.piece.text != piece.text:  # else the check saw this slice
        checked = cst_run.run_on(text, piece, rules, options, None, selection.analysed)
    piece, found, wrapper = checked.piece, checked.found, checked.wrapper
    fixes = {_in_file(d, piece).place: f for d in found if (f := cst_run.fix_of(d)) is not None}
    result: list[Diagnostic] = []
    for diagnostic in diagnostics:
        fix = fixes.get(diagnostic.place)
        if diagnostic.fix_safety is not None and fix is not None:
            new_code = cst_run.apply_fixes(wrapper, [fix], options.packages)
            _reparse(new_code, filename, [diagnostic.code])
            edits = [_edit_in_file(e, piece) for e in line_edits(piece.text, new_code)]
            diagnostic = dataclasses.replace(diagnostic, edits=tuple(edits))
        result.append(diagnostic)
    return result


def _in_file(d: Diagnostic, piece: firstpass.Slice) -> Diagnostic:
    """A finding of the slice at its place in the file."""
    if piece.whole:
        return d
    return dataclasses.replace(
        d,
        line=piece.file_line(d.line),
        end_line=piece.file_line(d.end_line),
        related=tuple((piece.file_line(line), column) for line, column in d.related),
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


def _fixable(diagnostics: list[Diagnostic], options: Options) -> list[Diagnostic]:
    """Findings of the rules the project does not let jaxfix fix lose their fix, and in a
    file read only for context, every finding but the parts of other files' fixes."""
    if not options.own_fixes:
        diagnostics = [d if d.part_of else _unfixed(d) for d in diagnostics]
    if options.fixable is None and not options.unfixable:
        return diagnostics
    allowed = {
        rule.code
        for rule in rule_index()
        if (options.fixable is None or matches(rule, options.fixable))
        and not matches(rule, options.unfixable)
    }
    return [d if d.code in allowed else _unfixed(d) for d in diagnostics]


def _unfixed(diagnostic: Diagnostic) -> Diagnostic:
    return dataclasses.replace(diagnostic, fix=None, fix_title=None, fix_safety=None)


def _analysers(rules: Sequence[RuleRef]) -> list[RuleRef]:
    return [rule for rule in rules if not rule.engine_implemented]


def _unsuppressed(
    text: str, diagnostics: list[Diagnostic], rules: Sequence[RuleRef]
) -> list[Diagnostic]:
    """`diagnostics` less those a suppression comment silences, plus the unused suppressions
    when JF001 is selected."""
    if not diagnostics and "jaxfix:" not in text:
        return diagnostics  # a `noqa` silences findings, and is never reported unused
    found = suppression.find(text)
    if not found:
        return diagnostics
    known = {key: rule.code for rule in rule_index() for key in (rule.code, rule.name)}
    active = {rule.code for rule in _analysers(rules)}
    report = any(rule.code == suppression.UNUSED_CODE for rule in rules)
    return suppression.apply(diagnostics, found, known, active, report)


def _withhold(
    found: Sequence[Diagnostic], kept: Sequence[Diagnostic], facts: ModuleFacts | None, why: str
) -> None:
    """A fix over several files whose finding here is not `kept` (a comment suppresses it, or
    the file is read only for context) is withheld whole, for `why`: the run hears that the
    function's calls elsewhere must not change."""
    if facts is None:
        return
    withheld = {f":{d.moves}" for d in found if d.moves and d not in kept}
    facts.return_changes[:] = [  # the function's own change, and its runners' (`WAITS`)
        dataclasses.replace(change, why_not=why)
        if change.transaction("") in withheld and not change.why_not
        else change
        for change in facts.return_changes
    ]


@dataclass(frozen=True)
class _FollowCalls:
    """Where the file sits, and what it tells the run of its calls into other modules."""

    place: Place
    facts: ModuleFacts
    anchors: frozenset[str]  # of the rules the text mentions an anchor of, jax or not


def _follows_calls(
    text: str,
    rules: Sequence[RuleRef],
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
    return _FollowCalls(place, facts, _all_anchors(tuple(mentioned), options.sinks))


@functools.lru_cache(maxsize=64)
def _all_anchors(rules: tuple[RuleRef, ...], sinks: tuple[Sink, ...]) -> frozenset[str]:
    """Every anchor of `rules` (thousands: made once for the files that mention the same)."""
    return frozenset().union(*(rule.anchors_with(sinks) for rule in rules))


# The last text CPython parsed in this process, with its file's name and its tree.
_last_parsed: tuple[str, str, ast.Module] | None = None


def _parsed(text: str, filename: str) -> ast.Module:
    """CPython's tree of `text`, kept for the next analysis of the same text: a file that
    other modules' traced code calls is analysed again in each round of tracing across modules
    (see `jaxfix.run.batch`), and nothing changes the tree."""
    global _last_parsed
    tree = _last_tree(text, filename)
    if tree is None:
        tree = firstpass.parse(text, filename)
        _last_parsed = (text, filename, tree)
    return tree


def _last_tree(text: str, filename: str) -> ast.Module | None:
    """The tree of `text` when it is the last one parsed."""
    last = _last_parsed
    return last[2] if last is not None and last[1] == filename and last[0] == text else None


def _part_tree(text: str, filename: str, part: Part) -> ast.Module | None:
    """The tree of `part` of `text` made of the statements of the file's tree that it keeps,
    when that tree is the last one parsed (a file's rounds analysed one after the other: a
    replay around an edit, a run in one process); None otherwise."""
    whole = _last_tree(text, filename)
    if whole is None:
        return None
    kept = [node for node in whole.body if part.keeps(firstpass.lines_of(node)[0])]
    return ast.Module(body=kept, type_ignores=[])


def _parse(
    text: str,
    filename: str,
    options: Options,
    place: Place | None,
    facts: ModuleFacts | None,
    tree: ast.Module | None = None,
) -> ast.Module:
    """CPython's tree of `text` (a syntax error is reported in every file, whatever the rules),
    unless it is given; in a run over packages, its top level noted in `facts` for the other
    modules' calls."""
    if tree is None:
        tree = _parsed(text, filename)
    if place is not None and facts is not None and options.packages:
        note_top_level(tree, facts)
    return tree


def _check(
    text: str,
    tree: ast.Module,
    rules: Sequence[RuleRef],
    options: Options,
    slicing: bool = True,
    follow: _FollowCalls | None = None,
    for_fixes: bool = False,
    around: Collection[int] | None = None,
    whole: bool = False,
) -> tuple[list[Diagnostic], _Selection]:
    """Findings in the slice of `text` the rules depend on, in the file's line numbers (none,
    without LibCST, when the first pass rules them out). Their fixes refer to the slice's syntax
    tree; `whole` runs the rules over the whole file, whose tree fixes edit. `slicing=False`
    analyses it all; `for_fixes` cuts the slice as fixes need it (`firstpass.relevant_slice`);
    `around`, to the statements that hold those lines. With `follow`, the calls traced code
    makes into the run's packages are added to `follow.calls_out` (from the analysis, without
    LibCST)."""
    try:
        traced_only = all(rule.traced_only for rule in rules)
        outer = options.part.whole if options.part is not None else None
        analysed = analyse_file(
            tree,
            text,
            _transforms(options),
            options.entries,
            traced_only,
            outer,
            options.static_classes,
        )
    except RecursionError:
        firstpass.check_depth(tree.body)  # says where the code is too deep to analyse
        raise
    selection = _Selection(tree, analysed)
    # Call sites of other files' functions can be anywhere: the whole file is analysed.
    sliced = slicing and all(rule.anchors for rule in rules) and not options.changed_imports
    # What the tree tells the other modules is noted in the first round across modules; in
    # the later ones (`options.entries`: functions other modules' traced code calls) only
    # the calls traced code makes change (`jaxfix.run.batch` keeps the rest).
    noting = follow is not None and not options.entries
    if sliced or follow is not None:
        found = candidates_read.collect(tree, analysed, _transforms(options))
    if noting:
        assert follow is not None
        _note_facts(tree, found, options.packages, follow, analysed)
    if follow is not None and options.follow:
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
        if around is not None:
            selection = selection.around(around)
            rules = [rule for rule in rules if by_rule[rule] & (selection.seeds or set())]
    if not rules:
        return [], selection
    piece = selection.slice(text, for_fixes=() if for_fixes else None, whole=whole)
    if piece is None:
        return [], selection
    from jaxfix.run import cst_run  # LibCST, from here on only

    facts = follow.facts if follow is not None else None
    checked = cst_run.run_on(text, piece, rules, options, facts, analysed)
    piece, diagnostics = checked.piece, checked.found
    return [_in_file(d, piece) for d in diagnostics], dataclasses.replace(
        selection, checked=checked
    )


def _note_facts(
    tree: ast.Module,
    found: candidates.Candidates,
    packages: Collection[str],
    follow: _FollowCalls,
    analysed: FileAnalysis,
) -> None:
    """What CPython's tree tells of the file's functions and their calls into the run; for a
    file whose functions can be entered from other modules (they reach an anchor, themselves
    or through their calls into the run), its outline (`jaxfix.models.parts`)."""
    facts, place = follow.facts, follow.place
    named = {
        index: statement.name
        for index, statement in enumerate(tree.body)
        if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef)
    }
    if follow.anchors:
        statements = found.statements(follow.anchors, traced_only=False, within=named)
        facts.anchored.update(named[i] for i in statements if i in named)
    facts.wrappers.update(found.wrappers(tree))
    facts.imported.update((raw, place.absolute(raw)) for raw in found.project_imports(packages))
    facts.decorators.update(found.project_decorators(packages))
    module = analysed.facts.module
    facts.static_classes.update(top_level_static_classes(tree, module))
    if facts.imported:
        facts.class_uses.update(class_use_names(module))
    for call, name in found.project_calls(packages, within=named):
        facts.calls.add((named[call.statement], place.absolute(name)))
    if (facts.anchored or facts.calls) and len(analysed.text) >= MIN_OUTLINED:
        whole = whole_module(analysed.facts.module)
        facts.outline = firstpass.outline(tree, found.bindings, facts.functions, whole)


def _transforms(options: Options) -> Mapping[str, TransformSpec]:
    return _user_transforms(options.transforms, options.wrapped)


@functools.lru_cache(maxsize=8)
def _user_transforms(
    names: tuple[str, ...], wrapped: tuple[tuple[str, Wrapped], ...]
) -> Mapping[str, TransformSpec]:
    """The transform table with the project's: one table for the files of a job."""
    return with_user_transforms(names, wrapped)


def _allowed(fix: AttachedFix, unsafe_fixes: bool) -> bool:
    return fix.safety.applies(unsafe_fixes)


def _reparse(code: str, filename: str, codes: Sequence[str]) -> Wrapper:
    from jaxfix.run import cst_run

    try:
        return cst_run.parse_checked(code, filename)
    except cst_run.INVALID as error:
        raise FixError(f"fix for {', '.join(codes)} produced invalid code: {error}") from error
