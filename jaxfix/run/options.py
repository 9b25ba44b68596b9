"""What a project's configuration changes in the analysis of one file, in plain values: sent to
worker processes and part of the cache key. Free of LibCST."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from jaxfix.analysis.project import ChangedImport, Entry, ForeignCalls
from jaxfix.models.parts import Part
from jaxfix.models.sinks import Sink
from jaxfix.models.transforms import Wrapped


@dataclass(frozen=True)
class Options:
    """Analysis settings beyond rule selection."""

    # The project's own jit-like wrappers (`my_lib.compiled`): each traces the function it is
    # applied to as `jax.jit` does; those the run defines as the transform they apply does,
    # with its arguments (`wrapped`, by name as the file imports them).
    transforms: tuple[str, ...] = ()
    wrapped: tuple[tuple[str, Wrapped], ...] = ()
    # The classes of the run's other modules that this file imports and that declare pytree
    # metadata fields: (the class's name as imported here, its static fields).
    static_classes: tuple[tuple[str, tuple[str, ...]], ...] = ()
    # Rule options: (rule code or name, option, values), e.g. ("JF101", "extra-serializers", ...).
    rule_options: tuple[tuple[str, str, tuple[str, ...]], ...] = ()
    # The project's rows of the host-sink model (`[tool.jaxfix.sinks]`, and the rule options
    # that are other spellings of it): each rule reads those of the kinds it owns.
    sinks: tuple[Sink, ...] = ()
    # Selectors of the rules whose fixes may be applied or offered (None: every rule's), and of
    # those whose fixes may not (`fixable` / `unfixable`).
    fixable: tuple[str, ...] | None = None
    unfixable: tuple[str, ...] = ()
    # The top-level packages of the run's files, whether to note the calls this file's traced
    # code makes into them, and the functions of this file that other modules' traced code
    # calls (see `jaxfix.analysis.project`).
    packages: tuple[str, ...] = ()
    follow: bool = False
    entries: tuple[Entry, ...] = ()
    # The part of the file those entries need, when it alone is to be analysed
    # (`jaxfix.models.parts`).
    part: Part | None = None
    # Names this file imports whose functions a rule's fix changes (`ReturnChange`), and
    # whether the other modules' calls of this file's such functions can be rewritten.
    changed_imports: tuple[ChangedImport, ...] = ()
    foreign_calls: tuple[ForeignCalls, ...] = ()
    # Where a hoist into a host callback makes host code wait (`jax.effects_barrier()`) is a
    # scan of the file's host code; an editor's check, which shows no fix, leaves it to the
    # request for the fix (which may then find that there is none).
    plan_waits: bool = True
    # False for a file read only for context (`--project-context`): its own findings' fixes
    # are not made, and those over several files are withheld whole; the parts of other
    # files' fixes (a call site, a barrier, a moved statement) are made in it.
    own_fixes: bool = True

    def for_rule(self, code: str, name: str) -> Mapping[str, tuple[str, ...]]:
        """The options set for the rule with this code and name."""
        return {
            option: values
            for rule, option, values in self.rule_options
            if rule.upper() == code or rule == name
        }


DEFAULT = Options()
