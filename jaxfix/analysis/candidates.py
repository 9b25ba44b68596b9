"""Which top-level statements can hold a finding, judged on CPython's syntax tree.

The nodes the analysis' walk indexed (`Module.indexed`) give the sites a rule can report at
(calls of its anchors, decorators, stores, hashed keys); what each top-level statement binds
and reads comes from that walk too; the file's analysis
(`jaxfix.analysis.file`) says which of them are in traced code and given traced values, so
that LibCST parses and resolves metadata only where a rule can fire.

Callees the rules report at are matched by their full name after import aliases, as the
analysis matches them (`d` for `from pickle import dumps as d` is `pickle.dumps`); method
anchors by name alone. Every test errs on the side of a candidate: a false one costs time, a
missed one would change the results (a property the tests check on every fixture and in
fuzzing).
"""

from __future__ import annotations

import ast
import builtins
import functools
from collections import Counter, defaultdict
from collections.abc import Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import NamedTuple

from jaxfix.analysis.file import FileAnalysis, statement_index
from jaxfix.analysis.keeping import store_root
from jaxfix.analysis.summaries import Bindings, Call
from jaxfix.analysis.transform_arguments import wrapped_by
from jaxfix.analysis.values import instance_class
from jaxfix.models.transforms import JIT, TRANSFORMS, Wrapped

FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_BUILTINS = frozenset(dir(builtins))
# An anchor that is no callee: the statements whose functions may store to state that outlives
# them: assign to an attribute or an item of a name that is not a local variable (a parameter,
# a global, a closure's name), or declare a name `global` / `nonlocal`; in traced code, the
# stores the analysis finds keep a leaking value there (`Keeping.kept_store`).
STORES = "<stores>"
# A method anchor written `OUTER + "append"` stands for a method that keeps its arguments in its
# receiver and returns None: it counts only on a name or attribute chain whose root is not a
# local variable of the calling function (`self.history.append`, not `xs.append` nor
# `x.at[i].add`), only where the call's value is dropped (`state = opt.update(g, state)` is a
# functional method), and, in traced code, only where the analysis finds that it keeps a
# leaking value in an object that outlives the trace (`Keeping.kept_call`).
OUTER = "<outer>."
# A method anchor written `TEXT_METHOD + "format"` stands for a method of a string: it counts
# only on a string literal or a plain name (`"{}".format(x)`, `template.format(x)`), outside
# `raise` and `assert` statements (where it builds an error's message, which the rule leaves
# alone), and, in traced code, not on a name the analysis finds holding an instance of one of the
# module's classes (`checker.format(x)`: the class's method).
TEXT_METHOD = "<text>."
# A full-name anchor written `MADE + "shelve.open"` stands for a call that makes an object the
# rule follows (a shelf written by `db[key] = value`): it counts wherever traced code calls it,
# whatever the call is given, unless it opens a file to be read only (`OPENING_MODES`).
MADE = "<made>."
# What opens a file, with the argument that says how (position, keyword) and its default: a
# mode (or a shelf's flag) written out with none of the letters that write, create or
# append opens it to be read, and nothing can be written to it.
OPENING_MODES = {
    **dict.fromkeys(["builtins.open", "io.open"], (1, "mode", "r")),
    **dict.fromkeys(["gzip.open", "bz2.open", "lzma.open"], (1, "mode", "rb")),
    "shelve.open": (1, "flag", "c"),
}
_WRITING_MODES = frozenset("waxcn+")
# A full-name anchor written `BOUND + "concurrent.futures.ThreadPoolExecutor"` stands for a
# method call in traced code on a name that the module binds, once and at its top level, to a
# call of that constructor (`POOL = ThreadPoolExecutor(2)`, then `POOL.map(f, x)`), or that an
# enclosing function binds with `with <call> as name:` (`with open(p) as log:` around a jitted
# closure that calls `log.write`): a method named too commonly to anchor on any receiver.
# `BOUND + "multiprocessing.Manager().dict"` stands for a name bound so to the object a
# method of the constructor's object makes (`SHARED = Manager().dict()`). Also an item or
# attribute that traced code stores into such a name (`SHARED[key] = value`).
BOUND = "<bound>."

# An anchor that stands for syntax, not a callee: a value hashed as a dict key or set element
# (`{k: v}`, `{k}`, `d[k]`, `k in s`, `d.get(k)`, `hash(k)`, `set([k])`, an argument a jitted
# function declares static). A rule that lists it has every statement holding such a site in
# traced code as a candidate; the words are what the text of such a file must contain.
HASHED_KEYS = "<hashed keys>"
# A NumPy array indexed by, or written, a traced value (`FileAnalysis.host_indexes`,
# `host_writes`).
HOST_INDEXES = "<host array indexes>"
SYNTAX_ANCHORS: dict[str, frozenset[str]] = {
    HASHED_KEYS: frozenset({"{", "dict", "Dict", "set", "Set", "Counter", "hash", "static_arg"}),
    HOST_INDEXES: frozenset({"numpy"}),
}
# What makes a dict or a set (last names: `collections.defaultdict`, `typing.Dict`, ...).
_KEYED_TYPES = frozenset(
    {"dict", "Dict", "set", "Set", "frozenset", "FrozenSet", "defaultdict", "DefaultDict"}
    | {"Counter", "OrderedDict"}
)
# Callees that hash their argument or its elements, and methods that hash their first argument.
_HASHING_CALLEES = frozenset({"hash", "set", "frozenset", "Counter"})
_KEY_METHODS = frozenset({"get", "setdefault", "pop", "add", "discard", "remove"})
# Builtins whose result is a Python value, whatever they receive (`id(x)`, `str(x)`).
_PYTHON_VALUED = frozenset({"id", "int", "float", "bool", "str", "repr", "len", "type"})
DISPLAYS = (ast.Dict, ast.Set, ast.DictComp, ast.SetComp)


@dataclass(eq=False)  # identity: two functions are never equal
class CandidateFunction:
    """A def or lambda: the top-level statement holding it, and what its body binds."""

    statement: int
    names: set[str]
    node: ast.AST | None = None  # the `def` or lambda
    decorators: list[ast.expr] = field(default_factory=list)
    # The root names of the attributes and items its body assigns (`self` for `self.a.b = 1`).
    store_roots: set[str] = field(default_factory=set)
    # Local variables (some): assignment targets and the parameters of `_plain_parameters`.
    binds: set[str] = field(default_factory=set)
    declared: set[str] | None = None  # the names it declares `global` or `nonlocal`, if any
    loops: list[ast.For | ast.AsyncFor] = field(default_factory=list)  # own body only
    params: set[str] = field(default_factory=set)

    # `self` of a method of a class that is not plain (a framework module, a dataclass, an
    # imported base): JF103 leaves its attributes alone.
    framework_self: str | None = None

    def is_outer(self, name: str) -> bool:
        """Whether `name` may name something that outlives a call (not a local variable)."""
        if name == self.framework_self:
            return False
        return name not in self.binds or (self.declared is not None and name in self.declared)

    @property
    def stores(self) -> bool:
        """It may store to state that outlives it (see `STORES`)."""
        return self.declared is not None or any(map(self.is_outer, self.store_roots))


class CandidateCall(NamedTuple):  # one per call of the file: a named tuple is made fastest
    call: ast.Call
    owner: CandidateFunction | None
    statement: int


@dataclass
class _TreeMemo:
    """What depends on the walk alone, computed once for the copies of `Candidates` made for
    other analyses of the same tree (`collect`)."""

    hashing: set[int] | None = None  # statements with a site that hashes a parameter
    calls_by_owner: dict[CandidateFunction | None, list[CandidateCall]] | None = None
    # The values and annotations each name is bound with, and whether it is a dict or a set
    # (see `_keyed_name`).
    keyed_values: dict[str, list[ast.expr]] | None = None
    keyed: dict[str, bool] = field(default_factory=dict)
    made_at_top: dict[str, frozenset[str]] | None = None  # see `_made_at_top`
    entered: dict[int, dict[str, set[str]]] = field(default_factory=dict)  # see `_entered_in`
    full_names: dict[ast.expr, frozenset[str]] = field(default_factory=dict)  # `full_names`
    callee_names: dict[ast.expr, frozenset[str]] = field(default_factory=dict)  # and builtins
    loop_names: dict[CandidateFunction, set[str]] = field(default_factory=dict)  # `_own_loop_names`
    # The calls of each plain name, and what `_passed_made` found of a function's parameter.
    calls_by_name: dict[str, list[CandidateCall]] | None = None
    passed: dict[tuple[ast.AST, str, frozenset[str]], bool] = field(default_factory=dict)
    called_parameters: frozenset[str] | None = None  # see `_called_parameters`
    calls_bound: dict[int, dict[str, list[ast.Call]]] = field(default_factory=dict)
    may_make: dict[frozenset[str], bool] = field(default_factory=dict)  # see `_may_make`


@dataclass
class Candidates:
    """The facts of one file that decide which statements can hold a finding."""

    functions: list[CandidateFunction] = field(default_factory=list)
    calls: list[CandidateCall] = field(default_factory=list)
    bindings: list[Bindings] = field(default_factory=list)  # one per top-level statement
    imported: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    transforms: Collection[str] = field(default_factory=lambda: TRANSFORMS)
    # The file's analysis: which functions are traced, which calls and stores get tracers.
    analysed: FileAnalysis | None = None
    # Possible hashing sites (see `HASHED_KEYS`) with the function whose body holds them, and
    # what decides whether a site hashes: the values and annotations names are bound with, and
    # the names of functions jitted with static arguments.
    key_sites: list[tuple[ast.expr, CandidateFunction | None, int]] = field(default_factory=list)
    dropped: set[ast.Call] = field(default_factory=set)  # calls whose value is not used
    keyed_bindings: list[tuple[str, ast.expr]] = field(default_factory=list)
    static_jitted: set[str] = field(default_factory=set)
    # The `with` statements of each top-level statement, by its index (see `_entered_in`).
    withs: dict[int, list[ast.With | ast.AsyncWith]] = field(default_factory=dict)
    _traced: set[CandidateFunction] | None = None
    _tree_memo: _TreeMemo = field(default_factory=_TreeMemo)  # shared by the copies

    def statements(
        self,
        anchors: Collection[str],
        traced_only: bool,
        given_traced: bool = True,
        run_time: Collection[str] = (),
        sure: Collection[str] = (),
        within: Collection[int] | None = None,
    ) -> set[int]:
        """Top-level statements (of `within`, when given) calling (or decorating with) one of
        `anchors`, in the body of a traced function (anywhere, when not `traced_only`), a
        call that is given a certainly traced value (any, when not `given_traced`). A dotted
        anchor is a full name, matched through the file's imports (`pickle.dumps`); a plain
        one is a method name, matched on any receiver (`x.tobytes()`). `STORES` stands for
        the stores of traced values into state that outlives the call (of `CandidateFunction.stores`
        when not `traced_only`), and `OUTER + name` for a method on a receiver that is not a
        local variable. The `run_time` anchors do not count in functions that never run
        (`Facts.abstract_only`); the `sure` ones only where a call gets a tracer that is no
        guess (`FileAnalysis.given_sure_tracer`)."""
        timed = frozenset(anchors) & frozenset(run_time)
        if traced_only and timed:
            facts = self._analysis().facts
            never_run = {f for f in self.traced() if facts.abstract_only(self._fid(f))}
            if never_run:
                rest = self._statements(
                    frozenset(anchors) - timed, True, given_traced, sure, within=within
                )
                return rest | self._statements(timed, True, given_traced, sure, never_run, within)
        return self._statements(anchors, traced_only, given_traced, sure, within=within)

    def _statements(
        self,
        anchors: Collection[str],
        traced_only: bool,
        given_traced: bool,
        sure: Collection[str],
        skipped: Collection[CandidateFunction] = (),
        within: Collection[int] | None = None,
    ) -> set[int]:
        """`statements`, with the functions `skipped` taken as not traced."""
        if not anchors or (traced_only and not self._analysis().facts.reasons):
            return set()  # (nothing traced: no traced-only anchor counts)
        qualified, methods, outer, made, text_methods, bound = _split(frozenset(anchors))
        if bound and not self._may_make(bound):
            bound = frozenset()  # (every way `on_bound` holds starts from such a call)

        def anchored(func: ast.expr) -> bool:
            if isinstance(func, ast.Attribute) and (
                func.attr in methods or (func.attr in text_methods and _may_be_text(func.value))
            ):
                return True
            # A builtin (`print`) counts also through a name that may shadow it: a candidate.
            return not self._callee_names(func).isdisjoint(qualified)

        def on_outer(call: CandidateCall) -> bool:
            func = call.call.func
            if not isinstance(func, ast.Attribute) or func.attr not in outer:
                return False
            root = _attribute_root(func.value)
            if root is None or (call.owner is not None and not call.owner.is_outer(root)):
                return False
            if call.call not in self.dropped and (
                self.analysed is None or not self.analysed.mutates_in_lambda(call.call)
            ):
                return False
            return self.analysed is None or call.call not in self.analysed.undone_calls()

        def on_bound(call: CandidateCall) -> bool:
            func = call.call.func
            if not isinstance(func, ast.Attribute) or not isinstance(func.value, ast.Name):
                return False
            name = func.value.id
            outer = call.owner is None or call.owner.is_outer(name)
            if outer and not self._made_for(call.statement, name).isdisjoint(bound):
                return True
            return self._passed_made(call.owner, name, bound)  # (the dearer question last)

        def keeps_traced(call: CandidateCall) -> bool:
            return on_outer(call) and self._analysis().kept_call(call.call)

        def keeps_closure(call: CandidateCall) -> bool:
            fid = self._fid(call.owner)
            kept = self._analysis().keeping.kept_call(call.call, fid) if fid else None
            return kept is not None and kept.closure

        # Where `traced_only` is not asked for, the analysis' verdicts are not needed.
        traced = self.traced() - set(skipped) if traced_only else set()
        given = self._analysis().traced_calls() if given_traced and traced_only else None

        def anchored_call(call: CandidateCall) -> bool:
            return anchored(call.call.func) or bool(outer and on_outer(call))

        def reported_at(call: CandidateCall) -> bool:
            if (made or bound) and (call.owner in traced or not traced_only):
                callee = self._callee_names(call.call.func) if made else frozenset()
                if not callee.isdisjoint(made) and not _opens_to_read(call.call, callee & made):
                    return True
                if bound and on_bound(call):
                    return True
            if not traced_only or (call.owner in traced and given is None):
                return anchored_call(call)
            if call.owner not in traced or given is None:
                return False
            known = given.get(call.call)
            if known is None:  # it may keep a function that closes over a tracer
                return bool(outer) and on_outer(call) and keeps_closure(call)
            # What the analysis resolved: a module's function is no method (`jnp.log` is not
            # a logger's `log`).
            if known.method is not None:
                return (
                    known.method in methods
                    or (known.method in text_methods and _text_method_call(known))
                    or (known.method in outer and keeps_traced(call))
                )
            if known.callee is not None:
                if known.callee in qualified and (
                    known.callee not in sure or self._analysis().given_sure_tracer(known)
                ):
                    return True
                # A method of an object another module keeps (`state.VALUES.append`).
                return bool(outer) and keeps_traced(call)
            return anchored(call.call.func) or bool(outer and keeps_traced(call))

        # In traced code only, only the calls traced functions make can be reported.
        calls = self._calls_in(traced) if traced_only else self.calls
        functions: Iterable[CandidateFunction] = traced if traced_only else self.functions
        if within is not None:
            calls = [call for call in calls if call.statement in within]
            functions = [function for function in functions if function.statement in within]
        found: set[int] = set()
        for call in calls:  # a statement found once needs no other call of it asked about
            if call.statement not in found and reported_at(call):
                found.add(call.statement)
        for function in functions:
            if any(anchored(_decorated_by(d)) for d in function.decorators) and (
                not traced_only or given is None or self._analysis().receives_traced(function.node)
            ):
                found.add(function.statement)
        if bound:  # `DB[key] = value` into a store a top-level statement or a `with` makes
            for function in functions:
                if function.statement not in found and any(
                    (
                        function.is_outer(root)
                        and not self._made_for(function.statement, root).isdisjoint(bound)
                    )
                    or self._passed_made(function, root, bound)
                    for root in function.store_roots
                ):
                    found.add(function.statement)
        if STORES in anchors:
            if traced_only:
                index = statement_index(self._analysis().tree)
                stores = self._analysis().kept_stores()
                found.update(i for node in stores if (i := index(node)) is not None)
            else:
                found.update(function.statement for function in functions if function.stores)
        if HASHED_KEYS in anchors:
            found |= self._hashing_statements(traced if traced_only else None, within, found)
        if HOST_INDEXES in anchors:
            index = statement_index(self._analysis().tree)
            analysed = self._analysis()
            indexes = [*analysed.host_indexes(), *analysed.host_writes()]
            found.update(i for node in indexes if (i := index(node)) is not None)
        return found if within is None else found.intersection(within)

    def _fid(self, function: CandidateFunction | None) -> str | None:
        """The analysis' id of `function`, when it knows it."""
        if function is None or function.node is None:
            return None
        return self._analysis().facts.module.by_node.get(function.node)

    def _analysis(self) -> FileAnalysis:
        if self.analysed is None:
            raise ValueError("traced code is known only with the file's analysis")
        return self.analysed

    def _made_for(self, index: int, name: str) -> set[str]:
        """The full names of what may have made `name` as the top-level statement `index`
        reads it: the call a top-level binding of it makes, or a `with` of that statement."""
        return set(self._made_at_top().get(name, ())) | self._entered_in(index, name)

    def _entered_in(self, index: int, name: str) -> set[str]:
        """The full names of `f` in each `with f(...) as name:` of the top-level statement
        `index` (the host function around a traced closure that uses `name`)."""
        memo = self._tree_memo.entered
        if index not in memo:
            found: dict[str, set[str]] = defaultdict(set)
            for statement in self.withs.get(index, ()):
                for item in statement.items:
                    target, opener = item.optional_vars, item.context_expr
                    if isinstance(target, ast.Name) and isinstance(opener, ast.Call):
                        found[target.id].update(self._callee_names(opener.func))
            memo[index] = dict(found)
        return memo[index].get(name, set())

    def _passed_made(
        self, owner: CandidateFunction | None, name: str, bound: frozenset[str]
    ) -> bool:
        """`name`, read in `owner`, is a parameter (of `owner` or of a function around it)
        that some call of its function gives what one of `bound` may have made: such a call,
        or a name the calling top-level statement binds to one or to `x.dict()` for
        `multiprocessing.Manager().dict`, whatever `x` is (a candidate errs on the side of
        one; the rule follows every call)."""
        fid = self._fid(owner)
        if not (fid and bound and name in self._called_parameters()):
            return False  # (the cheap questions first: resolving `name` builds scope indices)
        analysed = self._analysis()
        function_id = analysed.keeping.parameter_owner(name, fid)
        node = analysed.facts.module.nodes.get(function_id or "")
        if not isinstance(node, FUNCTIONS):
            return False
        memo = self._tree_memo.passed
        key = (node, name, bound)
        if key not in memo:
            memo[key] = self._given_made(node, name, bound)
        return memo[key]

    def _calls_bound(self, statement: int) -> dict[str, list[ast.Call]]:
        """`_calls_bound` of the file's top-level statement `statement`, walked once."""
        memo = self._tree_memo.calls_bound
        if statement not in memo:
            memo[statement] = _calls_bound(self._analysis().tree.body[statement])
        return memo[statement]

    def _calls_by_name(self) -> dict[str, list[CandidateCall]]:
        """The file's calls of each plain name (`f(...)`)."""
        memo = self._tree_memo
        if memo.calls_by_name is None:
            memo.calls_by_name = defaultdict(list)
            for candidate in self.calls:
                if isinstance(candidate.call.func, ast.Name):
                    memo.calls_by_name[candidate.call.func.id].append(candidate)
        return memo.calls_by_name

    def _may_make(self, bound: frozenset[str]) -> bool:
        """Some call of the file may make what one of `bound` names: every way `_given_made`
        finds a parameter given such a thing starts from one."""
        memo = self._tree_memo.may_make
        if bound not in memo:
            scopes = self._analysis().facts.module.scopes.values()
            methods = {b.rsplit(".", 1)[-1] for b in bound if "()." in b}
            methods &= set().union(*(scope.attributes for scope in scopes))  # read at all
            # A full name starts with an imported module's; a builtin's, with a plain name.
            roots = {name.split(".", 1)[0] for names in self.imported.values() for name in names}
            imported = any(b.split(".", 1)[0] in roots for b in bound)
            builtins = {b.split(".")[1].split("(")[0] for b in bound if b.startswith("builtins.")}

            def makes(call: ast.Call) -> bool:
                func = call.func
                if isinstance(func, ast.Attribute) and func.attr in methods:
                    return True
                if not imported:  # only a builtin's name can make it: `open(...)`, `open().m`
                    head = func
                    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Call):
                        head = func.value.func
                    if not isinstance(head, ast.Name) or head.id not in builtins:
                        return False
                return not self._made_by(call).isdisjoint(bound)

            memo[bound] = (imported or bool(builtins) or bool(methods)) and any(
                makes(call.call) for call in self.calls
            )
        return memo[bound]

    def _called_parameters(self) -> frozenset[str]:
        """The parameter names of the file's functions that it calls by a plain name: the
        only parameters `_given_made` can find given anything."""
        memo = self._tree_memo
        if memo.called_parameters is None:
            called = self._calls_by_name()
            memo.called_parameters = frozenset(
                arg.arg
                for node in self._analysis().facts.module.nodes.values()
                if isinstance(node, FUNCTIONS) and node.name in called
                for arg in ast.walk(node.args)
                if isinstance(arg, ast.arg)
            )
        return memo.called_parameters

    def _given_made(
        self, node: ast.FunctionDef | ast.AsyncFunctionDef, name: str, bound: frozenset[str]
    ) -> bool:
        """Some call of `node` gives its parameter `name` what one of `bound` may have made
        (see `_passed_made`)."""
        args = node.args
        positional = [a.arg for a in [*args.posonlyargs, *args.args]]
        position = positional.index(name) if name in positional else None
        methods = {b.rsplit(".", 1)[-1] for b in bound if "()." in b}
        for call in self._calls_by_name().get(node.name, ()):
            given = [k.value for k in call.call.keywords if k.arg == name]
            if position is not None and position < len(call.call.args):
                given.append(call.call.args[position])
            for arg in given:
                if isinstance(arg, ast.Name) and not self._made_for(
                    call.statement, arg.id
                ).isdisjoint(bound):
                    return True
                values = [arg] if isinstance(arg, ast.Call) else []
                if isinstance(arg, ast.Name):
                    values += self._calls_bound(call.statement).get(arg.id, [])
                for value in values:
                    func_of = value.func
                    if not self._made_by(value).isdisjoint(bound) or (
                        isinstance(func_of, ast.Attribute) and func_of.attr in methods
                    ):
                        return True
        return False

    def _made_at_top(self) -> dict[str, frozenset[str]]:
        """Each name the module binds once, by a top-level `name = f(...)`: the full names of
        `f` (see `BOUND`)."""
        memo = self._tree_memo
        if memo.made_at_top is None:
            defined = Counter(name for b in self.bindings for name in b.defines)
            memo.made_at_top = {
                target.id: self._made_by(statement.value)
                for statement in self._analysis().tree.body
                if isinstance(statement, ast.Assign) and isinstance(statement.value, ast.Call)
                for target in statement.targets
                if isinstance(target, ast.Name) and defined[target.id] == 1
            }
        return memo.made_at_top

    def _made_by(self, value: ast.Call) -> frozenset[str]:
        """The full names of what `value` calls, and `f().m` for the method `m` of what a
        call of `f` returns (`multiprocessing.Manager().dict`: see `BOUND`)."""
        names = self._callee_names(value.func)
        func = value.func
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Call):
            made = self._full_names(func.value.func)
            names |= {f"{name}().{func.attr}" for name in made}
        return names

    def _hashing_statements(
        self,
        traced: set[CandidateFunction] | None,
        within: Collection[int] | None = None,
        known: Collection[int] = (),
    ) -> set[int]:
        """The statements of the sites that may hash a value in `traced` functions; without
        them (what other modules' traced calls could reach), of the sites that read a
        parameter of their function, which such a call makes traced. Of the statements
        `within` only, when given. The statements `known` to be candidates already are not
        asked about again (each site is judged alone: the union is the same)."""
        found: set[int] = set()
        if traced is None and within is not None:
            sites = [site for site in self.key_sites if site[2] in within and site[2] not in known]
            return self._sites_reading_parameters(sites)
        if traced is not None:
            for site, owner, statement in self.key_sites:
                if (
                    statement not in found
                    and statement not in known
                    and owner in traced
                    and self._hashes(site, owner, traced=True)
                ):
                    found.add(statement)
            return found
        memo = self._tree_memo
        if memo.hashing is None:
            memo.hashing = self._sites_reading_parameters(self.key_sites)
        return set(memo.hashing)

    def _sites_reading_parameters(
        self, sites: Iterable[tuple[ast.expr, CandidateFunction | None, int]]
    ) -> set[int]:
        """The statements of the `sites` that may hash a parameter of their function."""
        found: set[int] = set()
        for site, owner, statement in sites:
            if (
                statement not in found
                and owner is not None  # module-level code reads no parameter
                and self._hashes(site, owner, traced=False)  # few sites hash: first
                and _reads_parameter(site, owner)
            ):
                found.add(statement)
        return found

    def _calls_in(self, functions: Iterable[CandidateFunction]) -> list[CandidateCall]:
        """The calls made directly in the bodies of `functions`."""
        memo = self._tree_memo
        if memo.calls_by_owner is None:
            grouped: dict[CandidateFunction | None, list[CandidateCall]] = defaultdict(list)
            for call in self.calls:
                grouped[call.owner].append(call)
            memo.calls_by_owner = dict(grouped)
        by_owner = memo.calls_by_owner
        return [call for function in functions for call in by_owner.get(function, ())]

    def _keyed_name(self, name: str) -> bool:
        """Whether `name` is bound to a dict or a set (by a value or an annotation), or, for
        `.name`, some `obj.name = {}` anywhere in the file. Asked name by name: few are."""
        memo = self._tree_memo
        if memo.keyed_values is None:
            values: dict[str, list[ast.expr]] = defaultdict(list)
            for bound, value in self.keyed_bindings:
                values[bound].append(value)
            for node in self._analysis().facts.module.binders:
                if isinstance(node, ast.Assign):
                    for target in node.targets:
                        if isinstance(target, ast.Attribute):
                            values[f".{target.attr}"].append(node.value)
            memo.keyed_values = dict(values)
        known = memo.keyed.get(name)
        if known is None:
            bindings = memo.keyed_values.get(name, ())
            known = memo.keyed[name] = any(map(self._keyed_binding, bindings))
        return known

    def _hashes(self, site: ast.expr, owner: CandidateFunction | None, traced: bool) -> bool:
        """Whether `site` may hash a tracer (see `_variable`); with `traced`, only one the
        analysis finds traced there, as the rule asks (`jaxfix.analysis.keys`)."""
        if isinstance(site, ast.Call) and not self._may_hash(site.func):
            return False  # most sites: a call of no hashing function
        loops = self._own_loop_names(owner)
        keys = self._analysis().keys if traced else None
        fid = self._fid(owner) if keys is not None else None
        if keys is not None and fid is not None and not keys.hashes_traced(fid):
            return False  # only guesses make the function traced: its values may be Python's

        def variable(key: ast.expr, loops: set[str]) -> bool:
            if not self._variable(key, loops):
                return False
            if keys is None or fid is None:
                return not traced or self._analysis().carries(key)
            return keys.tracer_valued(key, fid)

        def element(iterable: ast.expr) -> bool:
            """`set(...)` hashes each element: of a display, a comprehension, or what a call
            or an operation gives. Not of a name (`set(d)` may hash a dict's keys)."""
            if isinstance(iterable, ast.List | ast.Tuple | ast.Set):
                elements = [e for e in iterable.elts if not isinstance(e, ast.Starred)]
                return any(variable(e, loops) for e in elements)
            if isinstance(iterable, ast.GeneratorExp | ast.ListComp | ast.SetComp):
                return variable(iterable.elt, loops | self._loop_names(iterable.generators))
            if isinstance(iterable, ast.Name | ast.Attribute):  # a list of tracers
                return keys is not None and fid is not None and keys.holds_tracers(iterable, fid)
            return isinstance(iterable, ast.Call | ast.BinOp) and variable(iterable, loops)

        def receiver(expr: ast.expr) -> bool:
            """A dict or a set; in traced code `obj.name` only when `obj` is the method's
            `self` and its class gives `self.name` only dicts or sets (as the rule asks)."""
            if not isinstance(expr, ast.Attribute) or keys is None or fid is None:
                return self._keyed(expr)
            values = keys.attribute_values(expr, fid)
            return bool(values) and all(
                not isinstance(v, ast.Name | ast.Attribute) and self._keyed(v) for v in values
            )

        if isinstance(site, ast.Dict):
            return any(k is not None and variable(k, loops) for k in site.keys)
        if isinstance(site, ast.Set):
            return any(variable(e, loops) for e in site.elts)
        if isinstance(site, ast.DictComp | ast.SetComp):
            key = site.key if isinstance(site, ast.DictComp) else site.elt
            return variable(key, loops | self._loop_names(site.generators))
        if isinstance(site, ast.Subscript):
            plain = not isinstance(site.slice, ast.Slice)
            # A traced array indexed by a tracer is indexing, not a lookup by hash.
            array = traced and self._analysis().carries(site.value)
            return plain and not array and variable(site.slice, loops) and receiver(site.value)
        if isinstance(site, ast.Compare):
            keyed_right = any(receiver(c) for c in site.comparators)
            return keyed_right and variable(site.left, loops)
        if not isinstance(site, ast.Call):
            return False
        func, first = site.func, site.args[0] if site.args else None
        if isinstance(func, ast.Attribute) and func.attr in _KEY_METHODS:
            return first is not None and variable(first, loops) and receiver(func.value)
        if isinstance(func, ast.Name) and func.id in self.static_jitted:
            if not traced:
                return True
            entered = keys is None or fid is None or keys.entered(fid)
            return entered and site in self._analysis().static_given_traced()
        callees = self._hashing_callees(func)
        if callees == {"hash"}:
            return first is not None and variable(first, loops)
        return bool(callees) and first is not None and element(first)

    def _may_hash(self, func: ast.expr) -> bool:
        """Whether a call of `func` may hash its argument (the cheap part of `_hashes`)."""
        if isinstance(func, ast.Attribute) and func.attr in _KEY_METHODS:
            return True
        if isinstance(func, ast.Name) and func.id in self.static_jitted:
            return True
        return bool(self._hashing_callees(func))

    def _hashing_callees(self, func: ast.expr) -> set[str]:
        """The hashing builtins (`_HASHING_CALLEES`) `func` may be, by name or through an
        import: `x.at[i].set(v)` is no `set(...)`."""
        named = {func.id} if isinstance(func, ast.Name) else set()
        return ({n.rsplit(".", 1)[-1] for n in self._full_names(func)} | named) & _HASHING_CALLEES

    def _variable(self, key: ast.expr, loops: set[str]) -> bool:
        """Whether a key may be a tracer: not a constant, not a name `loops` bind (nor their
        attributes or items), not an imported module's attribute (`spmd.PARTITION_NAME`),
        not a Python value the builtins make."""
        if isinstance(key, ast.Tuple):
            return any(self._variable(element, loops) for element in key.elts)
        plain = loops
        while isinstance(key, ast.Attribute | ast.Subscript):
            if isinstance(key, ast.Attribute):
                plain = loops | self.imported.keys()
            key = key.value
        if isinstance(key, ast.Call) and isinstance(key.func, ast.Name):
            return key.func.id not in _PYTHON_VALUED
        if isinstance(key, ast.Name):
            return key.id not in plain
        return not isinstance(key, ast.Constant)

    def _own_loop_names(self, function: CandidateFunction | None) -> set[str]:
        """`_loop_names` of the loops of `function`'s own body (asked at each site in it)."""
        if function is None:
            return set()
        memo = self._tree_memo.loop_names
        if function not in memo:
            memo[function] = self._loop_names(function.loops)
        return memo[function]

    def _loop_names(self, loops: Iterable[ast.For | ast.AsyncFor | ast.comprehension]) -> set[str]:
        """The names (alone or in tuples) that loops bind, unless they walk what a jax
        function returns (`for row in jnp.eye(3)`: arrays): the rule leaves the others out."""
        return {
            name
            for loop in loops
            if not any(n.startswith("jax.") for n in self._call_names(loop.iter))
            for name in _loop_targets(loop.target)
        }

    def _call_names(self, expr: ast.expr) -> frozenset[str]:
        return self._full_names(expr.func) if isinstance(expr, ast.Call) else frozenset()

    def _keyed(self, expr: ast.expr) -> bool:
        """Whether `expr` may be a dict or a set: a display, a constructor call, or a name
        bound to one or annotated as one, or an attribute some object is given one in (see
        `_keyed_name`, found only when a site asks)."""
        if isinstance(expr, DISPLAYS):
            return True
        if isinstance(expr, ast.Call):
            return bool(self._last_names(expr.func) & _KEYED_TYPES)
        if isinstance(expr, ast.Attribute):
            return self._keyed_name(f".{expr.attr}")
        return isinstance(expr, ast.Name) and self._keyed_name(expr.id)

    def _keyed_binding(self, expr: ast.expr) -> bool:
        """Whether a value or an annotation (`dict[str, int]`) makes a name a dict or a set."""
        if isinstance(expr, DISPLAYS):
            return True
        if isinstance(expr, ast.Call | ast.Subscript):
            return self._keyed_binding(expr.func if isinstance(expr, ast.Call) else expr.value)
        return bool(self._last_names(expr) & _KEYED_TYPES)

    def _last_names(self, expr: ast.expr) -> set[str]:
        names = {name.rsplit(".", 1)[-1] for name in self._full_names(expr)}
        if isinstance(expr, ast.Name):  # a builtin, or a name the imports do not show
            names.add(expr.id)
        return names  # an attribute through the imports only: `x.at[i].set(v)` is no `set`

    def project_calls(
        self, packages: Collection[str], within: Collection[int] | None = None
    ) -> Iterator[tuple[CandidateCall, str]]:
        """Each call (in the top-level statements `within`, when given) of a function imported
        from `packages` or by a relative import, with the name it imports (`.io.save`,
        `pkg.io.save`)."""
        for call in self.calls:
            if within is None or call.statement in within:
                for name in sorted(self._project_names(call.call.func, packages)):
                    yield call, name

    def project_imports(self, packages: Collection[str]) -> set[str]:
        """The names and modules imported from `packages` or relatively (as imported)."""
        return {
            name
            for names in self.imported.values()
            for name in names
            if name.startswith(".") or name.split(".")[0] in packages
        }

    def project_decorators(self, packages: Collection[str]) -> set[str]:
        """The names imported from `packages` (or relatively) that decorate a function, also
        as `@name(...)` or `@partial(name, ...)`, or that are called with a function of the
        module first (`fast = compiled(step)`): where the run defines them as wrappers of a
        transform, they are transforms here."""
        found: set[str] = set()
        for function in self.functions:
            for decorator in function.decorators:
                for expr in (decorator, _decorated_by(decorator), *_first_argument(decorator)):
                    found |= self._project_names(expr, packages)
        defined = {name for function in self.functions for name in function.names}
        for call in self.calls:
            first = call.call.args[0] if call.call.args else None
            if isinstance(first, ast.Lambda) or (
                isinstance(first, ast.Name) and first.id in defined
            ):
                found |= self._project_names(call.call.func, packages)
        return found

    def wrappers(self, tree: ast.Module) -> dict[str, Wrapped]:
        """Top-level functions that return a transform applied to their first parameter
        (`def compiled(fn): return jax.jit(fn, static_argnums=1)`): decorators that trace,
        each with what it does to the functions it wraps."""
        found: dict[str, Wrapped] = {}
        for statement in tree.body:
            if not isinstance(statement, FUNCTIONS):
                continue
            params = [*statement.args.posonlyargs, *statement.args.args]
            for line in statement.body if params else ():
                value = line.value if isinstance(line, ast.Return) else None
                if not (
                    isinstance(value, ast.Call)
                    and value.args
                    and isinstance(value.args[0], ast.Name)
                    and value.args[0].id == params[0].arg
                    and any(map(_traces_first_argument, self._full_names(value.func)))
                ):
                    continue
                applied = sorted(self._full_names(value.func) & frozenset(self.transforms))
                if applied:
                    spec = TRANSFORMS.get(applied[0]) or TRANSFORMS[JIT]  # a user's: as jit
                    found[statement.name] = wrapped_by(applied[0], spec, value)
        return found

    def _project_names(self, expr: ast.expr, packages: Collection[str]) -> set[str]:
        return {
            name
            for name in self._full_names(expr)
            if name.startswith(".") or name.split(".")[0] in packages
        }

    def traced(self) -> set[CandidateFunction]:
        """Every function that the analysis finds traced."""
        if self._traced is None:
            nodes = self._analysis().traced_function_nodes()
            self._traced = {f for f in self.functions if f.node in nodes}
        return self._traced

    def _callee_names(self, func: ast.expr) -> frozenset[str]:
        """`full_names`, and `builtins.<name>` for a plain name (which may be the builtin)."""
        memo = self._tree_memo.callee_names
        found = memo.get(func)
        if found is None:
            found = self._full_names(func)
            if isinstance(func, ast.Name):
                found |= {f"builtins.{func.id}"}
            memo[func] = found
        return found

    def _full_names(self, expr: ast.expr) -> frozenset[str]:
        """What `expr` can name through the file's imports (`lax.scan` -> `jax.lax.scan`);
        asked of the same calls by every rule, so kept once the walk has seen every import."""
        memo = self._tree_memo.full_names
        found = memo.get(expr)
        if found is None:
            found = memo[expr] = full_names(expr, self.imported)
        return found


def _calls_bound(statement: ast.stmt) -> dict[str, list[ast.Call]]:
    """The calls `statement` (at any depth) assigns to each name (`name = f(...)`) or enters
    as it (`with f(...) as name:`)."""
    found: dict[str, list[ast.Call]] = defaultdict(list)
    for node in ast.walk(statement):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    found[target.id].append(node.value)
        elif isinstance(node, ast.With | ast.AsyncWith):
            for item in node.items:
                if isinstance(item.optional_vars, ast.Name) and isinstance(
                    item.context_expr, ast.Call
                ):
                    found[item.optional_vars.id].append(item.context_expr)
    return found


def full_names(expr: ast.expr, imported: Mapping[str, set[str]]) -> frozenset[str]:
    """What `expr` can name through `imported` (`lax.scan` -> `jax.lax.scan`)."""
    if isinstance(expr, ast.Name):
        return frozenset(imported.get(expr.id, ()))
    if isinstance(expr, ast.Attribute):
        return frozenset(f"{base}.{expr.attr}" for base in full_names(expr.value, imported))
    return frozenset()


def _traces_first_argument(transform: str) -> bool:
    """A project's own transforms trace their first argument, as `jax.jit` does."""
    spec = TRANSFORMS.get(transform)
    return spec is None or spec.fun_positions[:1] == (0,)


def _first_argument(decorator: ast.expr) -> list[ast.expr]:
    return decorator.args[:1] if isinstance(decorator, ast.Call) else []


def _decorated_by(decorator: ast.expr) -> ast.expr:
    return decorator.func if isinstance(decorator, ast.Call) else decorator


@functools.lru_cache(maxsize=64)
def _split(
    anchors: frozenset[str],
) -> tuple[
    frozenset[str], frozenset[str], frozenset[str], frozenset[str], frozenset[str], frozenset[str]
]:
    """A rule's anchors as full names, method names, `OUTER` method names, `MADE` full names,
    `TEXT_METHOD` method names and `BOUND` full names (once per rule: with the NumPy table,
    thousands)."""
    marked = (OUTER, MADE, TEXT_METHOD, BOUND)
    qualified = frozenset(a for a in anchors if "." in a and not a.startswith(marked))
    methods = frozenset(a for a in anchors if "." not in a and a not in SYNTAX_ANCHORS)
    outer = frozenset(a[len(OUTER) :] for a in anchors if a.startswith(OUTER))
    made = frozenset(a[len(MADE) :] for a in anchors if a.startswith(MADE))
    text_methods = frozenset(a[len(TEXT_METHOD) :] for a in anchors if a.startswith(TEXT_METHOD))
    bound = frozenset(a[len(BOUND) :] for a in anchors if a.startswith(BOUND))
    return qualified, methods, outer, made, text_methods, bound


def _may_be_text(receiver: ast.expr) -> bool:
    """Whether a `TEXT_METHOD`'s receiver may be a string: a string literal or a plain name."""
    return type(receiver) is ast.Name or (
        type(receiver) is ast.Constant and isinstance(receiver.value, str)
    )


def _text_method_call(call: Call) -> bool:
    """Whether a call of a `TEXT_METHOD` in traced code counts (see `TEXT_METHOD`)."""
    func = call.node.func
    return (
        not call.raising
        and isinstance(func, ast.Attribute)
        and _may_be_text(func.value)
        and (call.receiver is None or instance_class(call.receiver) is None)
    )


def _attribute_root(expr: ast.expr) -> str | None:
    """`a` for `a`, `a.b.c`, `a["k"].b` and `a.setdefault(k, [])` (`Keeping.outliving`); None
    for any other base (another call)."""
    root = store_root(expr)
    return root.id if isinstance(root, ast.Name) else None


def _reads_parameter(site: ast.expr, owner: CandidateFunction | None) -> bool:
    return owner is not None and any(
        isinstance(node, ast.Name) and node.id in owner.params for node in ast.walk(site)
    )


def _loop_targets(target: ast.expr) -> Iterator[str]:
    """The names a loop target binds, alone or in tuples (not starred)."""
    if isinstance(target, ast.Name):
        yield target.id
    elif isinstance(target, ast.Tuple | ast.List):
        for element in target.elts:
            yield from _loop_targets(element)


def _opens_to_read(call: ast.Call, openers: Collection[str]) -> bool:
    """Whether `call` of one of `openers` (full names) opens a file to be read only, as its
    literal mode (or its default) says (`OPENING_MODES`)."""
    modes = {OPENING_MODES[name] for name in openers if name in OPENING_MODES}
    if len(modes) != 1 or not set(openers).issubset(OPENING_MODES):
        return False
    ((position, keyword, default),) = modes
    if any(isinstance(arg, ast.Starred) for arg in call.args) or any(
        k.arg is None for k in call.keywords
    ):
        return False  # `open(*args)`, `open(p, **options)`: the mode is not written out
    given = [k.value for k in call.keywords if k.arg == keyword] + call.args[position:][:1]
    mode = default if not given else given[0].value if isinstance(given[0], ast.Constant) else None
    return len(given) < 2 and isinstance(mode, str) and _WRITING_MODES.isdisjoint(mode)
