"""Rule discovery: every `Rule` subclass in a module of `jaxfix.codemods` is a rule.

Selecting rules reads their index (`jaxfix.rules.rule_index`), which imports none of them: only
`all_rules` and what needs a rule's class (its documentation, its sink rows) import LibCST.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
from collections.abc import Iterable, Sequence
from functools import cache
from typing import TYPE_CHECKING

from jaxfix.models.sinks import Sink, SinkKind
from jaxfix.rules.rule_index import INDEX, RuleInfo, RuleRef, index_text, rule_index

if TYPE_CHECKING:
    from jaxfix.rules.rule import Rule

RULES_PACKAGE = "jaxfix.codemods"  # the `codemods/` folder, installed under this name


@cache
def all_rules() -> tuple[type[Rule], ...]:
    """Every rule, ordered by code."""
    from jaxfix.rules.rule import Rule

    found: list[type[Rule]] = []
    package = importlib.import_module(RULES_PACKAGE)
    for info in pkgutil.iter_modules(package.__path__):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{RULES_PACKAGE}.{info.name}")
        found.extend(
            value
            for value in vars(module).values()
            if isinstance(value, type)
            and issubclass(value, Rule)
            and value is not Rule
            and value.__module__ == module.__name__
        )
    return tuple(sorted(found, key=lambda rule: rule.code))


def sink_owner(kind: SinkKind) -> type[Rule]:
    """The rule that reports a traced value reaching a sink of `kind` (each kind has one)."""
    return next(rule for rule in all_rules() if kind in rule.kinds())


def sink_table(project_sinks: Iterable[Sink] = ()) -> list[tuple[Sink, type[Rule]]]:
    """Every row of the sink model with the rule that owns it, by rule and kind: the built-in
    rows first, then the project's, each by callable."""
    built_in = [row for rule in all_rules() for row in rule.sinks]
    table = [(row, sink_owner(row.kind)) for row in [*built_in, *project_sinks]]
    order = list(SinkKind)
    return sorted(
        table,
        key=lambda item: (
            item[1].code,
            order.index(item[0].kind),
            item[0].origin,
            item[0].callable,
        ),
    )


def find_rule(code_or_name: str) -> type[Rule] | None:
    """The rule with this code (`JF101`) or name (`serialize-in-traced`)."""
    info = find_info(code_or_name)
    return info.load() if info is not None else None


def find_info(code_or_name: str) -> RuleInfo | None:
    """The index entry of the rule with this code or name (imports no rule)."""
    for info in rule_index():
        if code_or_name.upper() == info.code or code_or_name == info.name:
            return info
    return None


def names(rule: RuleRef, selectors: Iterable[str]) -> bool:
    """Whether a selector is the rule's code or name (what an opt-in rule needs to run)."""
    return any(s.upper() == rule.code or s == rule.name for s in selectors)


def matches(rule: RuleRef, selectors: Iterable[str]) -> bool:
    """Whether a selector names the rule: its code, a prefix of it (`JF1`), its name or `ALL`."""
    return any(
        s.upper() == "ALL" or rule.code.startswith(s.upper()) or s == rule.name for s in selectors
    )


def select_rules(
    select: Sequence[str] = (), ignore: Sequence[str] = (), extend: Sequence[str] = ()
) -> list[RuleInfo]:
    """The rules `select` names (every default rule when empty) and those `extend` names, minus
    those `ignore` names. An opt-in rule runs only when named by its code or name: never by a
    prefix or `ALL`, so that a new opt-in rule does not start reporting in a project that
    selects `JF1`."""
    named = [*select, *extend]
    chosen = [
        rule
        for rule in rule_index()
        if (
            (not select or matches(rule, select) or matches(rule, extend))
            if rule.default_enabled
            else names(rule, named)
        )
    ]
    return [rule for rule in chosen if not matches(rule, ignore)]


def unknown_selectors(selectors: Iterable[str]) -> list[str]:
    """Selectors that name no rule (a typo must not silently disable a check)."""
    return [s for s in selectors if not any(matches(rule, [s]) for rule in rule_index())]


def opt_in_left_off(
    select: Sequence[str] = (), ignore: Sequence[str] = (), extend: Sequence[str] = ()
) -> list[tuple[str, RuleInfo]]:
    """Opt-in rules that a prefix or `ALL` in `select` / `extend` matches but that stay off,
    each with the first such selector: the user may think the prefix turned them on."""
    named = [*select, *extend]
    return [
        (next(s for s in named if matches(rule, [s])), rule)
        for rule in rule_index()
        if not rule.default_enabled
        and matches(rule, named)
        and not names(rule, named)
        and not matches(rule, ignore)
    ]


def suggestion(selector: str, with_all: bool = True) -> str | None:
    """The rule code or name (or `ALL`) closest to a selector that names no rule: a typo."""
    import difflib

    known = [*(["ALL"] if with_all else []), *(r.code for r in rule_index())]
    known += [rule.name for rule in rule_index()]
    word = selector.upper() if selector[:2].upper() == "JF" else selector
    close = difflib.get_close_matches(word, known, n=1)
    return close[0] if close else None


def main() -> None:
    """Write the rule index (`jaxfix/rules/rules.json`) from the rules themselves."""
    INDEX.write_text(index_text(all_rules()), encoding="utf-8")
    sys.stdout.write(f"wrote {INDEX}\n")


if __name__ == "__main__":
    main()
