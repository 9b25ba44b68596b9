"""What the run stack knows of each rule without importing it: a rule module imports LibCST
(a fifth of a second), which a file whose first pass finds no candidate never needs.

`jaxfix/rules/rules.json` holds one entry per rule, generated from the rules themselves:
regenerate it with `python -m jaxfix.rules.registry` after changing a rule's code, name, anchors
or flags (a test fails while it is stale). `RuleInfo.load` imports the rule when the engine runs it.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias

from jaxfix.models.sinks import Sink, SinkKind, anchors_with

if TYPE_CHECKING:
    from jaxfix.rules.rule import Rule

INDEX = Path(__file__).with_name("rules.json")


@dataclass(frozen=True, eq=False)  # one per rule: compared and hashed by identity
class RuleInfo:
    """A rule's identity and the class attributes the first pass reads (see `jaxfix.rules.rule.Rule`
    for what each means), under the same names: the engine takes either."""

    module: str
    class_name: str
    code: str
    name: str
    default_enabled: bool
    engine_implemented: bool
    project_aware: bool
    traced_only: bool
    anchors_receive_traced: bool
    reads_users: bool
    reads_after_calls: bool
    anchors: frozenset[str]
    run_time_anchors: frozenset[str]
    sure_tracer_anchors: frozenset[str]
    sink_kinds: frozenset[SinkKind]
    options: tuple[str, ...]

    def anchors_with(self, project_sinks: Sequence[Sink]) -> frozenset[str]:
        return anchors_with(self.anchors, self.sink_kinds, project_sinks)

    def load(self) -> type[Rule]:
        """The rule's class (imports its module, and LibCST)."""
        rule: type[Rule] = getattr(importlib.import_module(self.module), self.class_name)
        return rule


RuleRef: TypeAlias = "type[Rule] | RuleInfo"  # what the engine takes: a rule or its entry


@cache
def rule_index() -> tuple[RuleInfo, ...]:
    """Every rule's entry, ordered by code."""
    entries = json.loads(INDEX.read_text(encoding="utf-8"))
    return tuple(_info(entry) for entry in entries)


def info_of(rule: type[Rule]) -> RuleInfo:
    """The entry `jaxfix/rules/rules.json` would hold for `rule`."""
    return _info(entry_of(rule))


def _info(entry: dict[str, Any]) -> RuleInfo:
    sets = {"anchors", "run_time_anchors", "sure_tracer_anchors"}
    values: dict[str, Any] = {k: frozenset(v) if k in sets else v for k, v in entry.items()}
    values["sink_kinds"] = frozenset(SinkKind(kind) for kind in entry["sink_kinds"])
    values["options"] = tuple(entry["options"])
    return RuleInfo(**values)


def entry_of(rule: type[Rule]) -> dict[str, Any]:
    """The rule's entry, as `jaxfix/rules/rules.json` holds it."""
    return {
        "module": rule.__module__,
        "class_name": rule.__name__,
        "code": rule.code,
        "name": rule.name,
        "default_enabled": rule.default_enabled,
        "engine_implemented": rule.engine_implemented,
        "project_aware": rule.project_aware,
        "traced_only": rule.traced_only,
        "anchors_receive_traced": rule.anchors_receive_traced,
        "reads_users": rule.reads_users,
        "reads_after_calls": rule.reads_after_calls,
        "anchors": sorted(rule.anchors),
        "run_time_anchors": sorted(rule.run_time_anchors),
        "sure_tracer_anchors": sorted(rule.sure_tracer_anchors),
        "sink_kinds": sorted(rule.kinds()),
        "options": list(rule.options),
    }


def index_text(rules: Iterable[type[Rule]]) -> str:
    """The contents of `jaxfix/rules/rules.json` for `rules`."""
    return json.dumps([entry_of(rule) for rule in rules], indent=1) + "\n"
