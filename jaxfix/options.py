"""What a project's configuration changes in the analysis of one file, in plain values: sent to
worker processes and part of the cache key. Free of LibCST."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class Options:
    """Analysis settings beyond rule selection."""

    # The project's own jit-like wrappers (`my_lib.compiled`): each traces the function it is
    # applied to as `jax.jit` does.
    transforms: tuple[str, ...] = ()
    # Rule options: (rule code, option name, values), e.g. ("JF101", "extra-serializers", (...)).
    rule_options: tuple[tuple[str, str, tuple[str, ...]], ...] = ()
    # Codes of the rules whose fixes must not be applied nor offered (`fixable` / `unfixable`).
    unfixable: frozenset[str] = frozenset()

    def for_rule(self, code: str) -> Mapping[str, tuple[str, ...]]:
        """The options set for the rule with this code."""
        return {name: values for rule, name, values in self.rule_options if rule == code}


DEFAULT = Options()
