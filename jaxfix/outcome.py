"""What happened to one file, in plain values (no LibCST): what workers send back."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from jaxfix.diagnostic import Diagnostic
from jaxfix.project import ModuleFacts
from jaxfix.sourcefile import SourceFile


@dataclass
class Outcome:
    """What happened to one file."""

    display: str
    source: SourceFile | None = None
    diagnostics: list[Diagnostic] = field(default_factory=list)
    fixed: list[Diagnostic] = field(default_factory=list)
    new_text: str | None = None  # set when fixes changed the text
    error: str | None = None  # a one-line problem, prefixed by the file's name
    digest: str | None = None  # of the bytes that were analysed (for the cache)
    # What it tells the run of its calls into other modules (see `jaxfix.project`).
    facts: ModuleFacts = field(default_factory=ModuleFacts)
    # Read from standard input (under `--stdin-filename`'s name, if any): `apply` answers on
    # standard output and never writes a file of that name.
    stdin: bool = False

    def portable(self) -> Outcome:
        """This outcome without LibCST fixes, and without the source unless it is to be
        rewritten: cheap to send from a worker process."""
        return dataclasses.replace(
            self,
            source=self.source if self.new_text is not None else None,
            diagnostics=[d.portable() for d in self.diagnostics],
            fixed=[d.portable() for d in self.fixed],
        )
