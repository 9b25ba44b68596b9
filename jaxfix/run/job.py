"""What a run does with a file, in plain values: sent to every worker, part of the cache key."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Iterable
from dataclasses import dataclass

from jaxfix.models.diagnostic import Diagnostic
from jaxfix.models.edits import EditsWanted
from jaxfix.run.options import DEFAULT, Options
from jaxfix.run.stamps import digest


@dataclass(frozen=True)
class Job:
    """What to do with each file; plain values, sent to every worker."""

    select: tuple[str, ...] = ()  # empty: the default rules
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    fix: bool = False
    unsafe_fixes: bool = False
    edits: EditsWanted = False  # findings carry their fixes as text edits
    options: Options = DEFAULT

    def key(self) -> str:
        """A digest of what the findings depend on, for the cache (not `fix`: it stores
        unchanged files)."""
        return _key(self)

    def would_fix(self, diagnostics: Iterable[Diagnostic]) -> bool:
        """Whether applying this job's fixes could change a file with these findings."""
        return self.fix and any(
            d.fix_safety is not None and d.fix_safety.applies(self.unsafe_fixes)
            for d in diagnostics
        )


@functools.lru_cache(maxsize=64)
def _key(job: Job) -> str:
    plain = dataclasses.replace(job, fix=False, unsafe_fixes=False)
    return digest(repr(plain).encode())  # many files share a job: computed once for each
