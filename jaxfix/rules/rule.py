"""The rule model: a rule is a LibCST visitor that reports nodes, each with an optional fix.

Rules never parse, traverse on their own, resolve imports or write files: the engine does. A rule
reads the shared traced-context analysis (`self.traced`) and calls `self.report(...)`.
"""

from __future__ import annotations

import dataclasses
import functools
import sys
from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import TYPE_CHECKING, ClassVar

import libcst as cst
from libcst.metadata import PositionProvider, ScopeProvider

from jaxfix.fixes.fix import Fix, ImportNeeded, Replacement
from jaxfix.models.diagnostic import Diagnostic, FixSafety, split_message
from jaxfix.models.sinks import Sink, SinkKind, anchors_with, names_of

if TYPE_CHECKING:
    from jaxfix.fixes.tracing import TracedAnalysis

# A rule's options as a project sets them: option name -> dotted names.
RuleSettings = Mapping[str, tuple[str, ...]]


class Rule(cst.BatchableCSTVisitor):
    """Base class of every rule in `jaxfix.codemods`.

    Subclasses set the class attributes below, write `visit_*` methods and call `report`.
    The class docstring is the rule's documentation (`jaxfix explain CODE`).
    """

    code: ClassVar[str]
    name: ClassVar[str]
    summary: ClassVar[str]  # one line: what the rule finds (`jaxfix rules`, SARIF, hover)
    message: ClassVar[str]
    fix_title: ClassVar[str]
    fix_safety: ClassVar[FixSafety | None]
    # Its findings left without a fix, and why (docs/rules.md's rule table): "" when none are.
    unfixed: ClassVar[str] = ""
    # The title of the fix that moves a host statement after each call of its function (see
    # `jaxfix.fixes.after_call`), for a rule whose findings are such statements.
    after_call_title: ClassVar[str | None] = None
    # The title of the fix that moves a host statement into a host callback, for a rule whose
    # `fix_title` names several kinds of fix (None: `fix_title`).
    hoist_title: ClassVar[str | None] = None
    # The callees (of calls and decorators) at which the rule reports: full names as imports
    # give them (`pickle.dumps`) and method names matched on any receiver (`tobytes`). A file
    # or top-level statement that calls none of them is never analysed; empty means the rule
    # may report anywhere (every statement is analysed). `jaxfix.analysis.candidates.STORES` also
    # counts the stores to attributes, items and `global` / `nonlocal` names.
    anchors: ClassVar[frozenset[str]]
    # The rule reports only in code that jax traces: anchors count only inside functions that
    # are traced (see `jaxfix.analysis.candidates`).
    traced_only: ClassVar[bool] = True
    # Every anchored call the rule reports at is given a certainly traced value (receiver or
    # argument): anchored calls given none are no candidates. False when an anchor only marks
    # the context of a finding (the pool whose `map` later receives the tracer).
    anchors_receive_traced: ClassVar[bool] = True
    # Anchors whose calls matter only when the traced function runs (`print`): they do not
    # count in functions that only shape-finding transforms trace (`jax.eval_shape`).
    run_time_anchors: ClassVar[frozenset[str]] = frozenset()
    # Anchors whose calls the rule reports only when they get a tracer that is not a guess (a
    # parameter of a function an unknown higher-order call applies, or one that looks like a
    # Python value: `FileAnalysis.guessed_parameter`).
    sure_tracer_anchors: ClassVar[frozenset[str]] = frozenset()
    # The rule (or its fix) looks at the statements that use what a finding's statement
    # defines: the callers of its function, `f.cache_clear()`, the readers of a global it
    # sets. LibCST then sees those too.
    reads_users: ClassVar[bool] = False
    # The rule's fix looks at the host code that may run after a call of the finding's
    # function (to make it wait for the host callbacks the fix adds): LibCST then also sees the
    # module's top-level code and what uses it (`firstpass.relevant_slice`'s `script`).
    reads_after_calls: ClassVar[bool] = False
    # False for an opt-in rule: it runs only when selected by its code or name.
    default_enabled: ClassVar[bool] = True
    # The rule also reports in files that other files' findings concern (JF107's call sites of
    # a function defined elsewhere, `Options.changed_imports`), whatever their text.
    project_aware: ClassVar[bool] = False
    # The engine itself produces this rule's findings (no LibCST visit), e.g. JF001.
    engine_implemented: ClassVar[bool] = False
    # The options a project may set for the rule (`[tool.jaxfix.rules.CODE]`): name -> what it
    # does. Every option is a list of dotted names.
    options: ClassVar[Mapping[str, str]] = {}
    # The rule's built-in rows of the host-sink model (`jaxfix.models.sinks`): the callables,
    # by full name, whose kinds it owns. A project adds rows of those kinds in
    # `[tool.jaxfix.sinks]`.
    sinks: ClassVar[tuple[Sink, ...]] = ()

    METADATA_DEPENDENCIES = (
        PositionProvider,
        ScopeProvider,
    )

    def __init__(
        self,
        traced: TracedAnalysis,
        settings: RuleSettings | None = None,
        project_sinks: Sequence[Sink] = (),
    ) -> None:
        super().__init__()
        self.traced = traced
        self.settings: RuleSettings = settings or {}
        self.project_sinks = tuple(project_sinks)
        self.diagnostics: list[Diagnostic] = []
        self._objects: dict[Hashable, int] = {}  # the finding of each object (`report`)
        self.prepare()

    def prepare(self) -> None:
        """Set up what the rule derives from its settings and sinks for one file (none here)."""

    def get_visitors(self) -> Mapping[str, Callable[[cst.CSTNode], None]]:
        """LibCST's `visit_*` / `leave_*` methods of this rule. LibCST finds them with
        `inspect.getmembers` on every traversal (a quarter of a check's time); the names are
        the class's, so they are found once per class."""
        return {name: getattr(self, name) for name in visitor_names(type(self))}

    @classmethod
    def kinds(cls) -> frozenset[SinkKind]:
        """The sink kinds the rule owns: those of its built-in rows."""
        return frozenset(row.kind for row in cls.sinks)

    @classmethod
    def anchors_with(cls, project_sinks: Sequence[Sink]) -> frozenset[str]:
        """The rule's anchors once the project's sinks of its kinds are added."""
        return anchors_with(cls.anchors, cls.kinds(), project_sinks)

    @classmethod
    def load(cls) -> type[Rule]:
        """The rule itself (what `RuleInfo.load` imports)."""
        return cls

    def sink_rows(self, kind: SinkKind) -> tuple[Sink, ...]:
        """The rows of `kind`: the project's first, then the built-in ones (which win when a
        callable is in both, being read last into a mapping)."""
        return tuple(row for row in (*self.project_sinks, *self.sinks) if row.kind is kind)

    def sink_names(self, kind: SinkKind) -> frozenset[str]:
        """The callables of the rows of `kind`, built-in and the project's."""
        return names_of((*self.sinks, *self.project_sinks), kind)

    def report(
        self,
        node: cst.CSTNode,
        message: str | None = None,
        fix: Fix | None = None,
        same_object: Hashable | None = None,
    ) -> None:
        """Record a finding on `node`, with an optional fix. Findings of `same_object` (a memo
        dict, by any key that names it) are one: the first, with the others' places as its
        `related` ones."""
        span = self.get_metadata(PositionProvider, node)
        message, note = split_message(message or self.message)
        if same_object is not None:
            known = self._objects.setdefault(same_object, len(self.diagnostics))
            if known != len(self.diagnostics):
                first = self.diagnostics[known]
                place = (span.start.line, span.start.column)
                related = (*first.related, place)
                self.diagnostics[known] = dataclasses.replace(first, related=related)
                return
        self.diagnostics.append(
            Diagnostic(
                code=self.code,
                name=self.name,
                message=message,
                note=note,
                line=span.start.line,
                column=span.start.column,
                end_line=span.end.line,
                end_column=span.end.column,
                fix_title=fix.title if fix else None,
                fix_safety=fix.safety if fix else None,
                moves=fix.moves if fix else "",
                part_of=fix.part_of if fix else "",
                fix=fix,
            )
        )

    def make_fix(
        self,
        replacements: Mapping[cst.CSTNode, Replacement],
        imports_needed: Sequence[ImportNeeded] = (),
        removed_nodes: Sequence[cst.CSTNode] = (),
        title: str | None = None,
    ) -> Fix:
        """A fix with this rule's safety, and its title unless `title` says more."""
        assert self.fix_safety is not None, f"{self.code} declares no fix"
        return Fix(
            title or self.fix_title, self.fix_safety, replacements, imports_needed, removed_nodes
        )

    def qualified_names(self, node: cst.CSTNode) -> set[str]:
        """Names `node` resolves to through imports (never local look-alikes)."""
        return self.traced.imported_names(node)


@functools.cache
def visitor_names(cls: type[Rule]) -> tuple[str, ...]:
    """The visitor methods `cls` defines, less LibCST's empty stubs."""
    return tuple(
        name
        for name in dir(cls)
        if name.startswith(("visit_", "leave_"))
        and callable(getattr(cls, name))
        and not getattr(getattr(cls, name), "_is_no_op", False)
    )


# ----- every rule as a LibCST codemod command (`python -m libcst.tool codemod`) ------------------

ModuleHooks = tuple[Callable[[str], object], Callable[[], list[str]]]


def command_name(rule: type[Rule]) -> str:
    """The name of the rule's command in its module: `CacheOnTraced` -> `CacheOnTracedCommand`."""
    return f"{rule.__name__}Command"


def command_hooks(rule: type[Rule]) -> ModuleHooks:
    """The module `__getattr__` and `__dir__` that expose `rule`'s command: `libcst.tool codemod`
    looks it up with `getattr`, `libcst.tool list` finds it in `dir`. The command (and the run
    stack it needs: configuration, engine) is imported only then, so that a rule module sits
    below the engine."""
    name = command_name(rule)

    def __getattr__(attribute: str) -> object:
        if attribute != name:
            raise AttributeError(f"module {rule.__module__!r} has no attribute {attribute!r}")
        from jaxfix.run.libcst_command import command_for

        return command_for(rule)

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[rule.__module__]), name})

    return __getattr__, __dir__
