"""What happened to one file, in plain values (no LibCST): what workers send back."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from jaxfix.analysis.project import ModuleFacts
from jaxfix.models.diagnostic import Diagnostic
from jaxfix.run.sourcefile import SourceFile


@dataclass
class Outcome:
    """What happened to one file."""

    display: str
    source: SourceFile | None = None
    diagnostics: list[Diagnostic] = field(default_factory=list)
    fixed: list[Diagnostic] = field(default_factory=list)
    # What other files' fixes change in this one (`Diagnostic.part_of`): no findings of its
    # own; a run over a project puts them here (`with_parts_apart`), out of `diagnostics`.
    parts: list[Diagnostic] = field(default_factory=list)
    new_text: str | None = None  # set when fixes changed the text
    error: str | None = None  # a one-line problem, prefixed by the file's name
    digest: str | None = None  # of the bytes that were analysed (for the cache)
    # What it tells the run of its calls into other modules (see `jaxfix.analysis.project`).
    facts: ModuleFacts = field(default_factory=ModuleFacts)
    # Read from standard input (under `--stdin-filename`'s name, if any): `apply` answers on
    # standard output and never writes a file of that name.
    stdin: bool = False
    # A file read only for context (`--project-context`): not reported, not counted; written
    # when other files' fixes change it.
    context: bool = False
    # Whether its settings make unsafe fixes (the configuration's `unsafe-fixes`, or the
    # command line's): what `[*]` and the summary's counts of fixable findings follow.
    unsafe_fixes: bool = False
    # False for a path that could not be examined (missing, an unreadable folder): no file
    # to count in the summary, only its error.
    examined: bool = True

    def portable(self) -> Outcome:
        """This outcome without LibCST fixes, and without the source unless it is to be
        rewritten: cheap to send from a worker process."""
        return dataclasses.replace(
            self,
            source=self.source if self.new_text is not None else None,
            diagnostics=[d.portable() for d in self.diagnostics],
            fixed=[d.portable() for d in self.fixed],
            parts=[d.portable() for d in self.parts],
        )

    def with_parts_apart(self, module: str) -> Outcome:
        """This outcome with the changes it takes from other files' fixes in `parts` (and
        out of its findings and fixed findings), and the functions its fixes change the calls
        of named with their `module` (`Diagnostic.moves`), as the parts name them."""

        def named(diagnostic: Diagnostic) -> Diagnostic:
            if not diagnostic.moves or ":" in diagnostic.moves:
                return diagnostic
            return dataclasses.replace(diagnostic, moves=f"{module}:{diagnostic.moves}")

        every = [named(d) for d in self.diagnostics]
        return dataclasses.replace(
            self,
            diagnostics=[d for d in every if not d.part_of],
            fixed=[named(d) for d in self.fixed if not d.part_of],
            parts=[*self.parts, *(d for d in every if d.part_of)],
        )
