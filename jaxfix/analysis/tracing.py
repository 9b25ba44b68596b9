"""Which functions run under a transform, and which of their values are certainly tracers.

A fixed point over the summaries (`jaxfix.analysis.flow`): a transform's entry makes its target
traced, with the parameters it traces as traced sources (and the target staged under `jit`,
`scan`, ...); a call from traced code makes the callee traced, each parameter given a certainly
traced value a traced source, and the callee staged when the caller is. Sources only grow, so it
ends. Rules then ask for the calls, stores and values that are certainly traced (`Facts`).
"""

from __future__ import annotations

import ast
import enum
from collections.abc import Iterator
from dataclasses import dataclass, field

from jaxfix.analysis.flow import Call, Entry, Module, Store, Summary, bind_arguments
from jaxfix.analysis.values import Kind, Param, Source, Staged, Value


class Via(enum.Enum):
    """How a function came to be traced (typed, for rules and messages)."""

    DECORATED = "decorated with"
    PASSED = "passed to"
    CALLED = "called from"


@dataclass(frozen=True)
class Reason:
    via: Via
    name: str  # the transform (`jax.jit`) or the traced caller's name

    def __str__(self) -> str:
        return f"{self.via.value} `{self.name}`"


@dataclass
class Facts:
    """The traced functions of a module and the sources known to be traced."""

    module: Module
    traced: set[Source] = field(default_factory=set)
    reasons: dict[str, Reason] = field(default_factory=dict)  # traced function id -> why

    def kind(self, value: Value) -> Kind:
        """What `value` is, now that the traced sources are known."""
        if value.elements is not None:
            kinds = {self.kind(e) for e in value.elements}
            return Kind.TRACED if Kind.TRACED in kinds else value.kind
        return value.resolve(self.traced)

    def is_traced(self, node: ast.AST) -> bool:
        """Whether the expression `node` is certainly a tracer when its function runs."""
        for fid in self.reasons:
            value = self.module.functions[fid].values.get(node)
            if value is not None:
                return self.kind(value) is Kind.TRACED
        return False

    def traced_functions(self) -> Iterator[Summary]:
        for fid in self.reasons:
            yield self.module.functions[fid]

    def calls(self) -> Iterator[tuple[Call, list[Value]]]:
        """Every unguarded call in traced code that receives a certainly traced value, and
        those values (receiver first when it is one)."""
        for summary in self.traced_functions():
            for call in summary.calls:
                if call.guarded:
                    continue
                given = [call.receiver] if call.receiver is not None else []
                found = [x for x in [*given, *call.values()] if self.kind(x) is Kind.TRACED]
                if found:
                    yield call, found

    def calls_to(self, callees: frozenset[str]) -> list[Call]:
        """The calls of `callees` (full names) in traced code that are given a tracer."""
        return [call for call, _ in self.calls() if call.callee in callees]

    def stores(self) -> Iterator[Store]:
        """Unguarded stores of certainly traced values into state that outlives the call."""
        for summary in self.traced_functions():
            for store in summary.stores:
                if store.outlives and not store.guarded and self.kind(store.value) is Kind.TRACED:
                    yield store


def trace(module: Module) -> Facts:
    """Run the fixed point for one module."""
    facts = Facts(module)
    for entry in module.entries:
        facts.reasons.setdefault(entry.target, _entry_reason(module, entry))
        facts.traced |= {Param(entry.target, p) for p in entry.traced}
        if entry.staged:
            facts.traced.add(Staged(entry.target))
    changed = True
    while changed:
        changed = False
        for fid in list(facts.reasons):
            summary = module.functions[fid]
            for call in summary.calls:
                if call.target is None or call.target not in module.functions:
                    continue
                callee = module.functions[call.target]
                new: set[Source] = set()
                for name, value in bind_arguments(callee, call).items():
                    if facts.kind(value) is Kind.TRACED:
                        new.add(Param(callee.id, name))
                if Staged(fid) in facts.traced:
                    new.add(Staged(callee.id))
                if callee.id not in facts.reasons:
                    facts.reasons[callee.id] = Reason(Via.CALLED, summary.name)
                    changed = True
                if not new <= facts.traced:
                    facts.traced |= new
                    changed = True
            changed |= _nested(facts, summary)
    return facts


def _nested(facts: Facts, summary: Summary) -> bool:
    """Functions defined in traced code run under the same trace when they run at all: a
    closure's staged arrays are tracers too."""
    changed = False
    for fid, other in facts.module.functions.items():
        staged = Staged(summary.id) in facts.traced
        if other.parent == summary.id and staged and Staged(fid) not in facts.traced:
            facts.traced.add(Staged(fid))
            changed = True
    return changed


def _entry_reason(module: Module, entry: Entry) -> Reason:
    node = module.nodes.get(entry.target)
    decorated = isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and entry.node is node
    return Reason(Via.DECORATED if decorated else Via.PASSED, entry.transform)
