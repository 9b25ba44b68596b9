"""The host-sink model: which callables, by full name, take a value to the host, as rows of data.

Each rule declares its built-in rows (`Rule.sinks`); a project adds its own under
`[tool.jaxfix.sinks]`, one key per kind. Every kind belongs to exactly one rule, which alone
reports a traced value reaching a sink of that kind. Free of LibCST.
"""

from __future__ import annotations

import enum
from collections.abc import Collection, Iterable
from dataclasses import dataclass


class SinkKind(enum.StrEnum):
    """What a sink does with a value, and so which rule reports it."""

    SERIALIZE = "serialize"  # JF101: pickles, dumps or saves its payload
    # JF101: makes an object whose writing methods write their arguments: `save(path, ...)`
    # the rest, or the row's (a database's `execute`, a CSV writer's `writerow`). A
    # constructor whose methods write different arguments has a row per argument
    # (`diskcache.Cache`: `set(key, value)`, `push(value)`), each method in one row.
    CHECKPOINTER = "checkpointer"
    CACHE = "cache"  # JF102: a memoizing decorator (hashes or pickles the arguments)
    LOG = "log"  # JF103: a module-level function that logs its arguments
    LOGGER = "logger"  # JF103: makes a logger whose level methods (`info`, ...) log
    CONVERT = "convert"  # JF104: needs the concrete value of its first argument
    PARALLEL = "parallel"  # JF105: makes a pool whose `map` / `submit` send values to workers


class Origin(enum.StrEnum):
    """Where a row comes from: a rule's own table, or the project's configuration."""

    BUILT_IN = "built-in"
    PROJECT = "project"


@dataclass(frozen=True)
class Payload:
    """The argument a sink takes the value from: at `position` or by `keyword`; with `rest`,
    every later positional argument and every keyword argument as well."""

    position: int
    keyword: str | None = None
    rest: bool = False


FIRST = Payload(0)
EVERY = Payload(0, rest=True)


@dataclass(frozen=True)
class Sink:
    """One row: the callable's full name (`pickle.dumps`), its kind, the argument it takes the
    value from when the rule needs one, and a rule-specific detail (the error a conversion
    raises, what a parallel constructor makes)."""

    callable: str
    kind: SinkKind
    payload: Payload | None = None
    detail: str = ""
    origin: Origin = Origin.BUILT_IN


# What a project's row takes when the kind needs a payload: `serialize` and `convert` their
# first argument, `log` every argument.
PROJECT_PAYLOADS = {SinkKind.SERIALIZE: FIRST, SinkKind.CONVERT: FIRST, SinkKind.LOG: EVERY}
# The rule options that were the only way to add sinks before `[tool.jaxfix.sinks]`: equivalent
# spellings of a kind's key.
OPTION_KINDS = {"extra-serializers": SinkKind.SERIALIZE, "extra-cache-decorators": SinkKind.CACHE}


def project_sink(kind: SinkKind, name: str) -> Sink:
    """A row the project adds under `[tool.jaxfix.sinks]`."""
    return Sink(name, kind, PROJECT_PAYLOADS.get(kind), origin=Origin.PROJECT)


def rows(kind: SinkKind, names: Iterable[str], payload: Payload | None = None) -> tuple[Sink, ...]:
    """Built-in rows of one kind for `names`, sorted, all with the same payload."""
    return tuple(Sink(name, kind, payload) for name in sorted(names))


def anchors_with(
    anchors: frozenset[str], kinds: Collection[SinkKind], project_sinks: Iterable[Sink]
) -> frozenset[str]:
    """A rule's `anchors` once the project's rows of its `kinds` are added."""
    added = frozenset(row.callable for row in project_sinks if row.kind in kinds)
    return anchors | added if added else anchors  # the same set: cached downstream


def names_of(sinks: Iterable[Sink], kind: SinkKind) -> frozenset[str]:
    """The callables of the rows of `kind`."""
    return frozenset(row.callable for row in sinks if row.kind is kind)
