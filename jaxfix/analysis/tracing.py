"""Which functions run under a transform, and which of their values are certainly tracers.

A fixed point over the summaries (`jaxfix.analysis.flow`): a transform's entry makes its target
traced, with the parameters it traces as traced sources (and the target staged under `jit`,
`scan`, ...); a call from traced code makes the callee traced, each parameter given a certainly
traced value a traced source, and the callee staged when the caller is. Sources only grow, so it
ends. Rules then ask for the calls, stores and values that are certainly traced (`Facts`).
"""

from __future__ import annotations

import ast
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field

from jaxfix.analysis import values as v
from jaxfix.analysis.external import KEYWORDS, External
from jaxfix.analysis.reach import not_none_facts, not_none_params
from jaxfix.analysis.reasons import Reason, Via, abstract_only
from jaxfix.analysis.summaries import (
    Call,
    Entry,
    Module,
    Store,
    Summary,
    bind_arguments,
    defaults_of,
    outliving_params,
    parameter_value,
    params_of,
)
from jaxfix.analysis.values import Kind, Param, Source, Staged, Value
from jaxfix.models.transforms import CUSTOM_DERIVATIVES


@dataclass
class Facts:
    """The traced functions of a module and the sources known to be traced."""

    module: Module
    traced: set[Source] = field(default_factory=set)
    # Traced function id -> every way it came to be traced, the first found first.
    reasons: dict[str, list[Reason]] = field(default_factory=dict)
    # The module's functions that traced code hands to a parameter (`apply(lambda a: ..., x)`):
    # the callee's calls of that parameter call them.
    handed: dict[Param, set[Value]] = field(default_factory=dict)
    # The parameters that traced code (of this module or another) may give a dict whose keys
    # a flatten puts in another order (see `Value.reorders`): a host callback given one, or a
    # jitted function returning it, would hand it on with its keys sorted.
    reordering: set[Param] = field(default_factory=set)
    # Each traced function's calling contexts (a transform's entry, a call in traced code,
    # another module's call), by where they come from: the facts about the function that
    # hold in each (its parameters traced, given a value that is not None). Code that runs
    # only when some facts do not hold (`jaxfix.analysis.reach`) is resolved against them.
    contexts: dict[str, dict[object, frozenset[Source]]] = field(default_factory=dict)
    dead: frozenset[ast.Call] = frozenset()  # calls no context reaches (see `trace`)
    _children: dict[str, list[str]] | None = field(default=None, repr=False)
    _live: dict[tuple[str, frozenset[Source], frozenset[Source]], bool] = field(
        default_factory=dict, repr=False
    )

    def children(self) -> dict[str, list[str]]:
        """The functions defined directly in each function's body, by its id."""
        if self._children is None:
            self._children = {}
            for fid, parent in self.module.declared_in.items():
                self._children.setdefault(parent, []).append(fid)
        return self._children

    def note(self, fid: str, reason: Reason) -> bool:
        """Record that `fid` is traced for `reason`; whether that is news."""
        known = self.reasons.setdefault(fid, [])
        if reason in known:
            return False
        known.append(reason)
        return True

    def kind(self, value: Value) -> Kind:
        """What `value` is, now that the traced sources are known."""
        if value.elements is not None or value.fields is not None:
            kinds = {self.kind(part) for part in value.parts()}
            return Kind.TRACED if Kind.TRACED in kinds else value.resolve(self.traced)
        return value.resolve(self.traced)

    def enter(self, fid: str, where: object, facts: Iterable[Source]) -> None:
        """Record a calling context of `fid` (the last one recorded from `where` counts)."""
        self.contexts.setdefault(fid, {})[where] = frozenset(facts)

    def kind_at(self, value: Value, node: ast.AST) -> Kind:
        """What `value` is where `node` stands: not certainly traced when, in every calling
        context where it is traced, the node is not reached (`jaxfix.analysis.reach`)."""
        kind = self.kind(value)
        if kind is Kind.TRACED and not self.live(value, node):
            return Kind.UNKNOWN
        return kind

    def reached(self, node: ast.AST) -> bool:
        """Whether some calling context of the function holding `node` reaches it (any, when
        it runs unconditionally or no context is known)."""
        held = self.module.conditions.get(node)
        contexts = self.contexts.get(held[0]) if held is not None else None
        if held is None or not contexts:
            return True
        fid, unless = held
        return any(not self._holds(unless, fid, context) for context in contexts.values())

    def live(self, value: Value, node: ast.AST) -> bool:
        """Whether some calling context of the function holding `node` reaches it with
        `value` traced (any, when the node runs unconditionally or no context is known)."""
        held = self.module.conditions.get(node)
        contexts = self.contexts.get(held[0]) if held is not None else None
        if held is None or not contexts:
            return True
        fid, unless = held
        sources = v.sources_of([value])
        key = (fid, unless, sources)
        found = self._live.get(key)
        if found is None:
            found = self._live[key] = any(
                not self._holds(unless, fid, context) and self._holds(sources, fid, context)
                for context in contexts.values()
            )
        return found

    def _holds(self, facts: frozenset[Source], fid: str, context: frozenset[Source]) -> bool:
        """Whether one of `facts` holds in `context` (of `fid`): the facts about `fid`'s
        parameters as the context says, the others as the whole trace does."""
        return any(
            fact in context
            if fact.function == fid and not isinstance(fact, Staged)
            else fact in self.traced
            for fact in facts
        )

    def reorders(self, value: Value) -> bool:
        """Whether `value` may be, or hold, a dict whose keys a flatten reorders: one made so,
        or the object of a parameter that may be given one."""
        mark = value.reorders
        found = mark in self.reordering if isinstance(mark, Param) else mark
        return found or any(map(self.reorders, value.parts()))

    def is_traced(self, node: ast.AST) -> bool:
        """Whether `node` certainly holds a tracer where it stands (guarded or not)."""
        value = self.module.value_of(node)
        return value is not None and self.kind_at(value, node) is Kind.TRACED

    def tracer_at(self, node: ast.AST | None) -> bool:
        """Whether `node` certainly holds a tracer where it stands, and no tracer guard (nor a
        `try:` catching the concretization errors) protects it."""
        return node is not None and self.is_traced(node) and node not in self.module.guarded

    def ways(self, fid: str) -> set[Via]:
        """How `fid` comes to be traced (none when it is not)."""
        return {reason.via for reason in self.reasons.get(fid, ())}

    def abstract_only(self, fid: str | None) -> bool:
        """Whether only transforms that find shapes trace `fid` (`jax.eval_shape`): it never
        runs, so what it would do at run time never happens."""
        return fid is not None and abstract_only(self.reasons.get(fid, []))

    def traced_functions(self) -> Iterator[Summary]:
        for fid in self.reasons:
            if fid in self.module.functions:
                yield self.module.functions[fid]

    def calls(self) -> Iterator[tuple[Call, list[Value]]]:
        """Every unguarded call in traced code that receives a certainly traced value, and
        those values (receiver first when it is one)."""
        for summary in self.traced_functions():
            for call in summary.calls:
                if call.guarded:
                    continue
                given = [call.receiver] if call.receiver is not None else []
                found = [
                    x for x in [*given, *call.values()] if self.kind_at(x, call.node) is Kind.TRACED
                ]
                if found:
                    yield call, found

    def calls_to(self, callees: frozenset[str]) -> list[Call]:
        """The calls of `callees` (full names) in traced code that are given a tracer."""
        return [call for call, _ in self.calls() if call.callee in callees]

    def static_given_traced(self) -> Iterator[Call]:
        """Unguarded calls in traced code that give a certainly traced value to a parameter
        the callee's jit declares static (`static_argnums` / `static_argnames`): jax hashes
        it."""
        static_of = _static_parameters(self.module)
        for summary in self.traced_functions():
            for call in summary.calls:
                static = static_of.get(call.target or "", frozenset())
                if call.guarded or call.target is None or not static:
                    continue
                callee = self.module.summary_of(call.target)
                if callee is None:
                    continue
                given = bind_arguments(callee, call)
                if any(
                    self.kind_at(given[name], call.node) is Kind.TRACED
                    for name in static & given.keys()
                ):
                    yield call

    def stores(self) -> Iterator[Store]:
        """Unguarded stores of certainly traced values into state that outlives the trace."""
        return (s for s in self.outliving_stores() if self.kind_at(s.value, s.node) is Kind.TRACED)

    def outliving_stores(self) -> Iterator[Store]:
        """Unguarded stores in traced code into state that outlives the trace, whatever they
        store: not into an object of an enclosing function that runs under the trace too (a
        Pallas kernel's captured refs), unless the name is declared `nonlocal`."""
        for summary in self.traced_functions():
            for store in summary.stores:
                if store.outlives and not store.guarded and not self._kept_in_enclosing(store):
                    yield store

    def _kept_in_enclosing(self, store: Store) -> bool:
        """Whether `store.root`, not declared `global` / `nonlocal` where it is stored, is
        bound in an enclosing function whose object it does not outlive: a local of a traced
        one (made under the same trace), or a plain parameter of any (the caller's object,
        as for the function's own parameters)."""
        module = self.module
        if store.root in module.scope(store.caller).declared:
            return False
        fid = module.declared_in.get(store.caller, "<module>")
        while fid != "<module>":
            summary = module.functions.get(fid)
            params = summary.params if summary is not None else []
            if store.root in params:
                return summary is not None and store.root not in outliving_params(summary)
            if store.root in module.scope(fid).assigned:
                return fid in self.reasons
            fid = module.declared_in.get(fid, "<module>")
        return False


def trace(module: Module, external: Sequence[External] = ()) -> Facts:
    """Run the fixed point for one module. A parameter that traced code also passes Python
    values to (`canonicalize(dtype)` here, `canonicalize(np.float32)` there) is polymorphic:
    it is not certainly a tracer, so it is traced only by a transform, never through calls."""
    given_values = _given_python_values(module, external)
    facts = _fixed_point(module, external, given_values)
    polymorphic = _polymorphic(facts) | given_values
    if polymorphic - given_values:
        facts = _fixed_point(module, external, polymorphic)
    # Calls that no calling context of their function reaches (after a raise on a tracer)
    # trace nothing: once they are known, the fixed point is run again without them.
    dead = _dead_calls(facts)
    return _fixed_point(module, external, polymorphic, dead) if dead else facts


def _dead_calls(facts: Facts) -> frozenset[ast.Call]:
    """The calls in traced code that run only where facts hold that hold in every calling
    context of their function (`jaxfix.analysis.reach`)."""
    conditions = facts.module.conditions
    if not conditions:
        return frozenset()
    return frozenset(
        call.node
        for summary in facts.traced_functions()
        for call in summary.calls
        if call.node in conditions and not facts.reached(call.node)
    )


def _given_python_values(module: Module, external: Sequence[External]) -> frozenset[Source]:
    """The parameters other modules' traced code gives Python values."""
    found: set[Source] = set()
    for call in external:
        for fid, node in _top_level_functions(module, call.function):
            _, positional = params_of(node)
            found.update(
                Param(fid, positional[i]) for i in call.static_positions if i < len(positional)
            )
            found.update(Param(fid, name) for name in call.static_keywords)
    return frozenset(found)


def _top_level_functions(
    module: Module, name: str
) -> list[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    """The module-level functions called `name` (a `def` in each branch of an `if` may be),
    by name once per module: a module other modules trace is entered hundreds of times."""
    if module.top_level is None:
        module.top_level = defaultdict(list)
        for fid, node in module.nodes.items():
            if module.declared_in.get(fid) == "<module>" and isinstance(
                node, ast.FunctionDef | ast.AsyncFunctionDef
            ):
                module.top_level[node.name].append((fid, node))
    return module.top_level.get(name, [])


def _static_parameters(module: Module) -> dict[str, frozenset[str]]:
    """The parameters each function's jit declares static, by the function's id."""
    static_of: dict[str, frozenset[str]] = {}
    for entry in module.entries:
        static_of[entry.target] = static_of.get(entry.target, frozenset()) | entry.static
    return static_of


def _polymorphic(facts: Facts) -> frozenset[Source]:
    """The parameters some call in traced code gives a Python value (a literal, a dtype)."""
    found: set[Source] = set()
    for summary in facts.traced_functions():
        for call in summary.calls:
            callee = facts.module.summary_of(call.target) if call.target is not None else None
            if callee is None:
                continue
            for name, value in bind_arguments(callee, call).items():
                if facts.kind(value) is Kind.STATIC:
                    found.add(Param(callee.id, name))
    return frozenset(found)


def _fixed_point(
    module: Module,
    external: Sequence[External],
    polymorphic: frozenset[Source],
    dead: frozenset[ast.Call] = frozenset(),
) -> Facts:
    facts = Facts(module, dead=dead)
    for entry in module.entries:
        if entry.transform not in CUSTOM_DERIVATIVES:  # see `_custom_derivatives`
            _enter(facts, entry)
    static_of = _static_parameters(module)
    for outside in external:
        _enter_from_outside(facts, outside, static_of, polymorphic)
    changed = True
    while changed:
        changed = False
        for fid in list(facts.reasons):
            summary = module.summary_of(fid)
            if summary is None:  # never interpreted (unreachable code): nothing it does
                continue
            for call in summary.calls:
                if call.node in dead:
                    continue
                for callee, bound in _callees(facts, summary, call):
                    static = static_of.get(callee.id, frozenset())
                    new: set[Source] = set()
                    for name, value in bind_arguments(callee, bound).items():
                        # A jitted callee's static parameters hold what jax hashed, never a
                        # tracer (a tracer given there raises: JF106 reports that at the call).
                        param = Param(callee.id, name)
                        if param not in facts.reordering and facts.reorders(value):
                            facts.reordering.add(param)
                            changed = True
                        if name in static or param in polymorphic:
                            continue
                        if facts.kind(value) is Kind.TRACED:
                            new.add(param)
                        elif value.function is not None:
                            changed |= _hand(facts, param, value)
                    if Staged(fid) in facts.traced:
                        new.add(Staged(callee.id))
                    _enter_call(facts, summary, call, callee, bound, new)
                    changed |= facts.note(callee.id, Reason(Via.CALLED, _label(summary)))
                    if not new <= facts.traced:
                        facts.traced |= new
                        changed = True
            changed |= _applied(facts, summary, polymorphic)
            changed |= _nested(facts, summary)
        changed |= _staged_entries(facts)
        changed |= _custom_derivatives(facts)
    return facts


def _enter_call(
    facts: Facts, caller: Summary, call: Call, callee: Summary, bound: Call, traced: set[Source]
) -> None:
    """Record the context `call` (in traced `caller`) gives `callee`, bound as `bound`: the
    parameters it traces (`traced`), and those it gives a value that is not None when some
    branch of the callee asks."""
    context = frozenset(traced)
    if callee.none_tested:
        func = caller.values.get(call.node.func) if bound is call else None
        given = not_none_params(callee, bound, func, facts.module)
        context |= not_none_facts(callee.id, given)
    facts.enter(callee.id, (caller.id, call.node, callee.id), context)


def _enter(facts: Facts, entry: Entry) -> bool:
    """Trace `entry`'s target as its transform does; whether that is news."""
    changed = facts.note(entry.target, entry.reason)
    new: set[Source] = {Param(entry.target, p) for p in entry.traced}
    if entry.staged:
        new.add(Staged(entry.target))
    facts.enter(entry.target, id(entry), new | not_none_facts(entry.target, entry.not_none))
    if not new <= facts.traced:
        facts.traced |= new
        changed = True
    return changed


def _custom_derivatives(facts: Facts) -> bool:
    """`jax.custom_jvp` / `jax.custom_vjp` trace nothing themselves: called on the host, the
    function runs with the values it is given; it is traced when traced code calls it or a
    transform traces it (its `nondiff_argnums` staying static). Its rules (`f.defjvp(rule)`)
    run only when it is differentiated: they are taken as traced when it is."""
    changed = False
    for entry in facts.module.entries:
        if entry.primal is not None and entry.primal in facts.reasons:
            changed |= _enter(facts, entry)
    return changed


def _callees(facts: Facts, summary: Summary, call: Call) -> Iterator[tuple[Summary, Call]]:
    """The module's functions `call` (in traced `summary`) calls, each with the call as it
    binds that function's parameters: its resolved target, or the functions traced code
    handed to the parameter it calls (`fn(v)` in `def apply(fn, v)`)."""
    module = facts.module
    if call.target is not None:
        callee = module.summary_of(call.target)
        if callee is not None:
            yield callee, call
        return
    func = call.node.func
    if not isinstance(func, ast.Name) or func.id not in summary.params:
        return
    param = Param(summary.id, func.id)
    if summary.values.get(func) != parameter_value(param):
        return  # the name was rebound: it no longer holds what the caller handed
    for function in sorted(facts.handed.get(param, ()), key=repr):
        callee = module.summary_of(function.function) if function.function else None
        if callee is not None:
            bound = function.bound_positions + (function.qualified == "<bound>")
            yield callee, call._replace(target=callee.id, bound=bound, receiver=None)


def _hand(facts: Facts, param: Param, function: Value) -> bool:
    """Note that traced code hands `function` to `param`; whether that is news."""
    handed = facts.handed.setdefault(param, set())
    if function in handed:
        return False
    handed.add(function)
    return True


def _applied(facts: Facts, summary: Summary, polymorphic: frozenset[Source]) -> bool:
    """An unknown callable in traced code given functions and traced data (`tree_map(fn,
    x)`, `associative_scan(combine, xs)`) applies one to the other: every positional parameter
    of those functions is traced, unless it is polymorphic. Not a thread's `target=` (not in
    `applied`)."""
    changed = False
    staged = Staged(summary.id) in facts.traced
    for call in summary.calls:
        if not call.applied or call.node in facts.dead:
            continue
        data = [x for x in call.values() if x.function is None]
        if not any(facts.kind(x) is Kind.TRACED for x in data):
            continue
        for function in call.applied:
            node = facts.module.nodes.get(function.function or "")
            if node is None or function.function is None:
                continue
            _, positional = params_of(node)
            skipped = function.bound_positions + (function.qualified == "<bound>")  # self
            params = positional[skipped:]
            zipped = _zipped(call, function, len(params))
            new: set[Source] = {
                Param(function.function, p)
                for index, p in enumerate(params)
                if zipped is None or facts.kind(zipped[index]) is Kind.TRACED
            }
            new -= polymorphic
            if staged:
                new.add(Staged(function.function))
            facts.enter(function.function, (summary.id, call.node, function), new)
            changed |= facts.note(function.function, Reason(Via.APPLIED))
            if not new <= facts.traced:
                facts.traced |= new
                changed = True
    return changed


def _zipped(call: Call, function: Value, params: int) -> Sequence[Value] | None:
    """When `call` hands `function` one positional sequence per parameter after it
    (`foreach(write, names, values)`, `map(f, xs, ys)`), what each parameter gets an element
    of; None when the arguments do not line up (`associative_scan(fn, xs)` gives `fn` two
    elements of one sequence): then any of them may reach any parameter."""
    if any(isinstance(a, ast.Starred) for a in call.node.args):
        return None
    position = next((i for i, a in enumerate(call.args) if a is function), None)
    if position is None:
        return None
    data = call.args[position + 1 :]
    return data if len(data) == params else None


def _staged_entries(facts: Facts) -> bool:
    """A transform applied inside staged code stages its target too (`jax.grad(loss)(w, x)`
    inside `jit`); a bound method's `self` is traced when its instance is."""
    changed = False
    for entry in facts.module.entries:
        if any(source in facts.traced for source in entry.receiver):
            node = facts.module.nodes.get(entry.target)
            positional = params_of(node)[1] if node is not None else []
            if positional:
                context = facts.contexts.get(entry.target, {}).get(id(entry), frozenset())
                facts.enter(entry.target, id(entry), context | {Param(entry.target, positional[0])})
            if positional and Param(entry.target, positional[0]) not in facts.traced:
                facts.traced.add(Param(entry.target, positional[0]))
                changed = True
        if Staged(entry.caller) in facts.traced and Staged(entry.target) not in facts.traced:
            facts.traced.add(Staged(entry.target))
            changed = True
    return changed


def _nested(facts: Facts, summary: Summary) -> bool:
    """Functions defined in traced code run under the same trace when they run at all: a
    closure's staged arrays are tracers too."""
    if Staged(summary.id) not in facts.traced:
        return False
    changed = False
    for fid in facts.children().get(summary.id, ()):
        if Staged(fid) not in facts.traced:
            facts.traced.add(Staged(fid))
            changed = True
    return changed


def _enter_from_outside(
    facts: Facts,
    call: External,
    static_of: dict[str, frozenset[str]],
    polymorphic: frozenset[Source],
) -> None:
    """Another module's traced code calls a top-level function of this one; its static
    parameters (if it is jitted here) stay static, and so do those also given Python values."""
    for fid, node in _top_level_functions(facts.module, call.function):
        params, positional = params_of(node)
        traced = {positional[i] for i in call.positions if i < len(positional)}
        traced |= set(call.keywords) & set(params)
        args = node.args
        defaulted = set(defaults_of(node.args)) if call.required_only else set()
        if call.rest_from is not None:
            traced |= set(positional[call.rest_from :]) - defaulted
            traced |= {args.vararg.arg} if args.vararg else set()
        if KEYWORDS in call.keywords:  # a traced `**kwargs`: also the keyword-only ones
            traced |= {a.arg for a in args.kwonlyargs} - defaulted
            traced |= {args.kwarg.arg} if args.kwarg else set()
        facts.note(fid, Reason(Via.OTHER_MODULE, call.reason))
        given = {positional[i] for i in call.reordering_positions if i < len(positional)}
        given |= set(call.reordering_keywords) & set(params)
        facts.reordering |= {Param(fid, p) for p in given}
        traced -= static_of.get(fid, frozenset())
        new: set[Source] = set({Param(fid, p) for p in traced} - polymorphic)
        if call.staged:
            new.add(Staged(fid))
        not_none = {positional[i] for i in call.not_none_positions if i < len(positional)}
        not_none |= set(call.not_none_keywords) & set(params)
        facts.enter(fid, (id(call), fid), new | not_none_facts(fid, not_none))
        facts.traced |= new


def _label(summary: Summary) -> str:
    return "<lambda>" if isinstance(summary.node, ast.Lambda) else summary.name
