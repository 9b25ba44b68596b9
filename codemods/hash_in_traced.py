"""JF106 hash-in-traced: a traced value hashed as a dict key, a set element or a static argument."""

from __future__ import annotations

from collections.abc import Sequence

import libcst as cst
from libcst.metadata import Assignment, GlobalScope

from jaxfix.analysis.candidates import HASHED_KEYS
from jaxfix.analysis.keys import HOST_METHODS
from jaxfix.analysis.reasons import Via
from jaxfix.fixes.eager_calls import references
from jaxfix.fixes.fix import Fix, ImportNeeded
from jaxfix.fixes.hoist import jax_module_name, jax_numpy_name
from jaxfix.fixes.memo import MemoRemoval, memo_removal
from jaxfix.fixes.static_params import static_in_caller, traced_in_callee
from jaxfix.fixes.syntax import source_of
from jaxfix.fixes.tracing import TracedFunction
from jaxfix.models.diagnostic import FixSafety
from jaxfix.models.transforms import JIT
from jaxfix.rules.rule import Rule, command_hooks

# Calls that make a dict or a set, and annotations that declare one.
KEYED_CONSTRUCTORS = frozenset(
    {
        "builtins.dict",
        "builtins.set",
        "builtins.frozenset",
        "collections.defaultdict",
        "collections.Counter",
        "collections.OrderedDict",
    }
)
KEYED_ANNOTATIONS = KEYED_CONSTRUCTORS | {
    "typing.Dict",
    "typing.Set",
    "typing.FrozenSet",
    "typing.DefaultDict",
    "typing.Counter",
    "typing.OrderedDict",
}
# Callees that hash each element of the iterable they receive.
ELEMENT_HASHERS = frozenset({"builtins.set", "builtins.frozenset", "collections.Counter"})
# Methods of a dict or a set that hash their first argument.
DICT_METHODS = frozenset({"get", "setdefault", "pop"})
KEY_METHODS = DICT_METHODS | {"add", "discard", "remove"}
# Callables that hash by identity, whatever they hold.
HASHED_BY_ID = frozenset({"functools.partial"})
# Array namespaces: a loop over what their functions return walks an array, not a dict.
ARRAY_NAMESPACES = ("jax.numpy.", "jax.lax.", "jax.nn.")
SHOWN = 60  # characters of a site's source the message quotes

LOOKUP = (
    "tracers are unhashable; index an array instead (`jnp.asarray(values)[i]`, `jnp.where`,"
    " `lax.switch`), or look the value up outside the trace or on a static argument"
)
MEMBERSHIP = (
    "tracers are unhashable; compare arrays instead (`jnp.isin(x, jnp.asarray(sorted(s)))`),"
    " or test the value outside the trace or on a static argument"
)
# Key makers whose seed the fix derives with `fold_in` instead of `hash`.
KEY_MAKERS = frozenset({"jax.random.PRNGKey", "jax.random.key"})
# `hash(x) % n` and `hash(x) & mask` only narrow a seed: the fix folds `x` in whole.
SEED_NARROWING = (cst.Modulo, cst.BitAnd)
HASH = (
    "tracers are unhashable; for a random seed derive a key inside the trace"
    " (`jax.random.fold_in(key, x)`), or hash a static argument"
)
# What code may do with a lookup table that the fix reads as an array: read it (these methods,
# `len` and `list` of it). A method that changes it, an item store or delete, or handing it to
# a function (which may change it) would make the array a copy that goes stale.
TABLE_READS = frozenset({"get", "keys", "values", "items", "copy"})
STATIC = (
    "jax raises `ValueError: Non-hashable static arguments are not supported`; pass it as a"
    " traced argument, or make it static in the caller too"
)

# Why a static argument given a tracer has no fix: making the caller's parameter static changes
# what its own callers may pass; a value made from traced arrays only its author can remake.
STATIC_UNFIXED = (
    "no automatic fix: that changes what its callers may pass (an array fails there, each new"
    " value compiles again)"
)
BUILT_UNFIXED = (
    "no automatic fix: the value is made from traced arrays; build it from Python or NumPy values"
    " outside the trace"
)


class HashInTraced(Rule):
    """
    ## What it does
    Finds a traced value used as a hash key inside traced code: a key of a dict display or
    comprehension, `d[x]` (load, store, `del`), `x in d`, `d.get(x)`, `d.setdefault(x, ...)`,
    `d.pop(x)`, `s.add(x)` on a dict or set, an element of a set display, `set([x, ...])`,
    `frozenset(...)`, `collections.Counter(...)`, `hash(x)` (as in `np.random.seed(hash(x))`),
    and a traced value passed as a static argument of a same-module jitted function
    (`static_argnums`, `static_argnames`) by a function a transform traces. The receiver must
    be known to be a dict or a set: a display, a `dict()` / `set()` / `defaultdict()` /
    `Counter()` call, a name bound only to one, a parameter annotated `dict` or `set`, or
    `self.name` in a method when the methods of its class give `self.name` only one.
    Indexing an array or a list (`xs[i]`) is not hashing. Left alone, as they often hold
    Python values: names a loop binds (`for k in params`), `set(name)` (a dict's keys)
    unless the name, or `self.name` made in the same method, holds a list or tuple of
    tracers (a parameter every call gives a list or tuple display, `tuple(...)` of one),
    `int(x)` / `str(x)` keys, the parameters of custom derivative rules and of callables only
    handed to an unknown function (`update(..., logger=log)`).

    ## Why is this bad?
    Inside a trace an array is a `Tracer`, which is unhashable: the lookup raises
    `TypeError: unhashable type: 'DynamicJaxprTracer'` (`'BatchTracer'` under `vmap`,
    `'LinearizeTracer'` under `grad`), and a jitted function given a tracer for a static argument
    raises `ValueError: Non-hashable static arguments are not supported`. Even a hashable
    tracer would not help: the key is only known when the compiled function runs.

    ## Example
    ```python
    SCALE = {0: 1.0, 1: 0.5, 2: 0.25}


    @jax.jit
    def scaled(x, level):
        return x * SCALE[level]
    ```

    ## Use instead
    ```python
    SCALE = jnp.asarray([1.0, 0.5, 0.25])


    @jax.jit
    def scaled(x, level):
        return x * SCALE[level]
    ```
    Index an array with the traced value, choose with `jnp.where` or `lax.switch`, or make
    the key static (`jax.jit(scaled, static_argnames="level")`) when it is a Python value.
    For a seed, use `jax.random.fold_in(key, x)` instead of `hash(x)`.

    ## Fix safety
    Unsafe. A lookup table (`SCALE[level]`, `SCALE.get(level, 0.0)`) bound once at module
    level to a dict display (or `dict([...])` of pairs) whose keys are `0, 1, ..., n-1` in order
    and whose values are numbers, and that nothing changes, becomes an array index:
    `jnp.asarray(list(SCALE.values()))[level]`, and `.get(level, d)` keeps its default with
    `jnp.where((level >= 0) & (level < n), ..., d)`. A key out of range no longer raises
    `KeyError` (the array clamps it), and the values become an array of jax's default dtype
    (`float32`), where Python floats were weakly typed: an `x` of `bfloat16` times a value is
    `float32`. A memo dict (`if k in MEMO: return MEMO[k]` at the top of a function that later
    fills it with `MEMO[k] = v`), bound at module level to an empty dict, or `self._memo` made
    empty (`{}`, `dict()`) by the methods of the function's class, is dropped with both
    statements and its bindings when the rest of the function is JAX code, nothing else in
    the file uses the dict (no other read or write, no `getattr`) and no code in view runs the
    function outside a trace: under a trace the memo can only fail, and `jax.jit` caches the
    traced computation. Code in other modules that calls the function eagerly computes again
    instead of getting a stored value. A key made from a hash, `jax.random.PRNGKey(hash(x))`
    or `jax.random.key(hash(x))` (also with `% n` or `& mask`, and through a local name read
    once: `seed = hash(x) % n` then `PRNGKey(seed)` becomes `seed = x` then
    `fold_in(PRNGKey(0), seed)`), becomes `jax.random.fold_in(jax.random.PRNGKey(0), x)`: a
    different key for each `x`, as the hash meant, but not the key `PRNGKey(hash(x))` gives
    for an `x` called with a Python int, so an eager caller draws other numbers. Other tables,
    sets, other uses of `hash(x)` (`np.random.seed(hash(x))` seeds the host's generator) have
    no fix: the rewrite depends on what they hold and on the values the key takes. A static
    argument given a parameter of a function jitted by a bare `@jax.jit` (or a value made
    from such parameters) makes those parameters static there too (`@partial(jax.jit,
    static_argnames="n")`) when every call of the function in the module passes Python
    constants for them (`twice(x, 2)`) and its body reads them only as values (no `n.shape`,
    no `n[0]`): a caller elsewhere that passes an array then fails, and each new value
    compiles again (the fix's title says when the function is public). Otherwise the message
    names the parameters to make static (`static_argnames`) and the call that rules the fix
    out. A static argument given a pytree of traced arrays (a tracer, or a `tuple`, a `list`
    or a `namedtuple` built from them) leaves the static arguments of the helper's
    `@partial(jax.jit, ...)` when only traced code calls the helper and it only hands the
    parameter (or a field or item of it) to JAX functions: it is then traced, and a caller
    elsewhere that passes a value jax cannot trace (a string) fails. Other values made from
    traced arrays only their author can build from Python values.

    ## References
    - https://docs.jax.dev/en/latest/faq.html#jit-and-caching
    - https://docs.jax.dev/en/latest/jit-compilation.html#marking-arguments-as-static
    - https://docs.jax.dev/en/latest/notebooks/Common_Gotchas_in_JAX.html
    """

    code = "JF106"
    name = "hash-in-traced"
    summary = "A traced value used as a dict key, a set element, a hash or a static argument"
    message = "`{site}` hashes the traced `{key}` inside `{function}` ({reason}): {advice}"
    fix_title = (
        "Index an array of the table's values, drop the memo dict, fold the value into a key, or"
        " make a static argument static in the jitted caller (its calls pass constants) or"
        " traced in the helper (given a tuple, list or namedtuple of arrays)"
    )
    # Each fix's own title says which of these it is.
    table_title = "Index an array of the table's values (`jnp.asarray`)"
    memo_title = "Drop the memo dict: compute the value at each call"
    key_title = "Fold the value into the key (`jax.random.fold_in`)"
    fix_safety = FixSafety.UNSAFE
    unfixed = (
        "sets, dicts other than a fixed `0..n-1` table of numbers or a private memo, host seeds "
        "(`np.random.seed(hash(x))`), and static arguments that some call fills with a "
        "non-constant or that the helper reads as a Python value (the message names the caller"
        " to make static)"
    )
    anchors = frozenset({HASHED_KEYS})
    reads_users = True  # a static argument's fix reads the calls of the jitted caller
    static_title = "Make the parameter static in the jitted caller too"
    traced_title = "Make the static parameter a traced argument of the jitted helper"

    def prepare(self) -> None:
        """The memo removals planned, by function (see `_memo_fix`)."""
        self._memo_fixes: dict[cst.FunctionDef, MemoRemoval | None] = {}
        self._memo_made: dict[cst.FunctionDef, Fix] = {}
        self._static_made: dict[tuple[cst.FunctionDef, tuple[str, ...]], tuple[Fix | None, str]]
        self._static_made = {}

    # ----- the sites ------------------------------------------------------------------------

    def visit_Dict(self, node: cst.Dict) -> None:
        for element in node.elements:
            if isinstance(element, cst.DictElement) and self._check(node, element.key, LOOKUP):
                return

    def visit_DictComp(self, node: cst.DictComp) -> None:
        self._check(node, node.key, LOOKUP)

    def visit_Set(self, node: cst.Set) -> None:
        self._check_each(node, node.elements)

    def visit_SetComp(self, node: cst.SetComp) -> None:
        self._check(node, node.elt, MEMBERSHIP)

    def visit_Subscript(self, node: cst.Subscript) -> None:
        indices = [e.slice.value for e in node.slice if isinstance(e.slice, cst.Index)]
        if len(indices) != len(node.slice) or not self._keyed(node.value):
            return
        key = indices[0] if len(indices) == 1 else cst.Tuple([cst.Element(i) for i in indices])
        self._check(node, key, LOOKUP, shown=indices[0] if len(indices) == 1 else None)

    def visit_Comparison(self, node: cst.Comparison) -> None:
        left = node.left
        for target in node.comparisons:
            if isinstance(target.operator, cst.In | cst.NotIn) and self._keyed(target.comparator):
                self._check(node, left, MEMBERSHIP)
            left = target.comparator

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        names = self.qualified_names(func)
        first = node.args[0] if node.args and not node.args[0].star else None
        if isinstance(func, cst.Attribute) and func.attr.value in KEY_METHODS:
            if first is not None and first.keyword is None and self._keyed(func.value):
                advice = LOOKUP if func.attr.value in DICT_METHODS else MEMBERSHIP
                self._check(node, first.value, advice)
        elif "builtins.hash" in names and first is not None:
            self._check(node, first.value, HASH)
        elif names & ELEMENT_HASHERS and first is not None and first.keyword is None:
            self._check_elements(node, first.value)
        else:
            self._check_static(node)

    # ----- what hashes a tracer -------------------------------------------------------------

    def _check(
        self,
        site: cst.CSTNode,
        key: cst.BaseExpression,
        advice: str,
        shown: cst.BaseExpression | None = None,
    ) -> bool:
        """Report `site` when `key` is a tracer there; whether it did."""
        context = self._context(site)
        if context is None or not self._tracer_valued(key):
            return False
        self._report(site, key if shown is None else shown, advice, context)
        return True

    def _check_each(self, site: cst.CSTNode, elements: Sequence[cst.BaseElement]) -> None:
        """One report for the first traced element of a display."""
        for element in elements:
            if isinstance(element, cst.Element) and self._check(site, element.value, MEMBERSHIP):
                return

    def _report(
        self,
        site: cst.CSTNode,
        key: cst.CSTNode,
        advice: str,
        context: TracedFunction,
        fix: Fix | None = None,
    ) -> None:
        fix = fix or (self._seed_fix(site) if advice is HASH else None)
        fix = fix or self._table_fix(site)
        if fix is None:
            fix, kept = self._memo_fix(site)
            advice = f"{advice} (the memo is not dropped: {kept})" if kept else advice
        message = self.message.format(
            site=_code(site),
            key=_code(key),
            function=context.label,
            reason=context.reasons[0],
            advice=advice,
        )
        self.report(site, message, fix, same_object=self._object_of(site, key, fix))

    def _object_of(
        self, site: cst.CSTNode, key: cst.CSTNode, fix: Fix | None
    ) -> tuple[object, ...] | None:
        """What `site` looks up, when findings elsewhere may share it: a dict (or set) a
        name or attribute holds, with the same key in the same function (a memo's lookup and
        store: one finding) and the same fix (a memo removal, or none), else None."""
        if isinstance(site, cst.Subscript):
            container: cst.BaseExpression = site.value
        elif isinstance(site, cst.Comparison) and len(site.comparisons) == 1:
            container = site.comparisons[0].comparator
        else:
            return None
        if not isinstance(container, cst.Name | cst.Attribute):
            return None
        function = self.traced.owner_function(site)
        return (id(function), source_of(container), _code(key), id(fix) if fix else None)

    # ----- the fix: a key folded from the value --------------------------------------------

    def _seed_fix(self, site: cst.CSTNode) -> Fix | None:
        """`jax.random.PRNGKey(hash(x))` (or `hash(x) % n`, `hash(x) & m`) ->
        `jax.random.fold_in(jax.random.PRNGKey(0), x)`, `key` alike, spelled as the maker is."""
        if not isinstance(site, cst.Call) or len(site.args) != 1:
            return None
        seed: cst.CSTNode = site
        narrowing = self.traced.parent(seed)
        if isinstance(narrowing, cst.BinaryOperation) and narrowing.left is seed:
            if not isinstance(narrowing.operator, SEED_NARROWING):
                return None
            seed = narrowing
        argument, maker = self.traced.parent(seed), None
        replacements: dict[cst.CSTNode, cst.CSTNode] = {}
        use: cst.Name | None = None
        if isinstance(argument, cst.Assign) and argument.value is seed:  # `s = hash(x) % n`
            use = self._sole_use(argument)
            argument = self.traced.parent(use) if use is not None else None
            replacements[seed] = site.args[0].value.with_changes(lpar=[], rpar=[])
        if isinstance(argument, cst.Arg) and not argument.star:
            maker = self.traced.parent(argument)
        if not isinstance(maker, cst.Call) or len(maker.args) != 1:
            return None
        if not self.qualified_names(maker.func) & KEY_MAKERS:
            return None
        imports: list[ImportNeeded] = []
        if isinstance(maker.func, cst.Attribute):  # `jax.random.key`, `random.key`
            random = source_of(maker.func.value)
        else:  # `from jax.random import key`
            jax_name, imports = jax_module_name(self.traced, maker)
            if not jax_name:
                return None
            random = f"{jax_name}.random"
        value = source_of(site.args[0].value if use is None else use)
        folded = f"{random}.fold_in({source_of(maker.func)}(0), {value})"
        new = cst.parse_expression(folded).with_changes(lpar=maker.lpar, rpar=maker.rpar)
        return self.make_fix({**replacements, maker: new}, imports, title=self.key_title)

    def _sole_use(self, assign: cst.Assign) -> cst.Name | None:
        """The one read of the local name `assign` binds, when it binds it alone and once, in
        the same function (`seed` of `seed = hash(x)`, read by `PRNGKey(seed)`)."""
        if len(assign.targets) != 1 or not isinstance(assign.targets[0].target, cst.Name):
            return None
        target = assign.targets[0].target
        function = self.traced.owner_function(assign)
        if function is None or target.value in self.traced.declared_outer_names(function):
            return None
        if len(self.traced.assignments(target)) != 1:
            return None
        uses = references(self.traced, target)
        if len(uses) != 1 or not isinstance(uses[0], cst.Name):
            return None
        return uses[0] if self.traced.owner_function(uses[0]) is function else None

    # ----- the fix: a lookup table as an array ----------------------------------------------

    def _table_fix(self, site: cst.CSTNode) -> Fix | None:
        """`T[k]` -> `jnp.asarray(list(T.values()))[k]`; `T.get(k, d)` (`k` a name) ->
        `jnp.where((k >= 0) & (k < n), jnp.asarray(list(T.values()))[k], d)`."""
        default: cst.BaseExpression | None = None
        if isinstance(site, cst.Subscript) and len(site.slice) == 1:
            table, index = site.value, site.slice[0].slice
            if not isinstance(index, cst.Index):
                return None
            key = index.value
        elif (
            isinstance(site, cst.Call)
            and isinstance(site.func, cst.Attribute)
            and site.func.attr.value == "get"
            and len(site.args) == 2
            and all(a.keyword is None and not a.star for a in site.args)
            and isinstance(site.args[0].value, cst.Name)
        ):
            table, key, default = site.func.value, site.args[0].value, site.args[1].value
        else:
            return None
        size = self._table_size(table)
        jnp, imports = jax_numpy_name(self.traced, site) if size else ("", [])
        if not isinstance(table, cst.Name) or not jnp:
            return None
        array = f"{jnp}.asarray(list({table.value}.values()))[{source_of(key)}]"
        if default is not None:
            k = source_of(key)
            array = f"{jnp}.where(({k} >= 0) & ({k} < {size}), {array}, {source_of(default)})"
        new = cst.parse_expression(array)
        new = new.with_changes(lpar=site.lpar, rpar=site.rpar)
        return self.make_fix({site: new}, imports, title=self.table_title)

    def _memo_fix(self, site: cst.CSTNode) -> tuple[Fix | None, str]:
        """The removal of the memo dict the function of `site` checks and fills (see
        `jaxfix.fixes.memo`), when `site` is in it; one fix for the function's findings. Else
        why the memo stays ("" where there is none)."""
        function = self.traced.owner_function(site)
        if not isinstance(function, cst.FunctionDef):
            return None, ""
        if function not in self._memo_fixes:
            self._memo_fixes[function] = memo_removal(self.traced, function)
        plan = self._memo_fixes[function]
        if plan is None or not any(self.traced.inside(site, s) for s in plan.statements):
            return None, plan.kept if plan is not None else ""
        fix = self._memo_made.get(function)
        if fix is None:
            removed = dict.fromkeys(plan.statements, cst.RemovalSentinel.REMOVE)
            fix = self.make_fix(removed, title=self.memo_title)
            self._memo_made[function] = fix
        return fix, ""

    def _table_size(self, table: cst.BaseExpression) -> int | None:
        """The number of entries of a module-level lookup table the fix can read as an array
        (see the rule's docs), or None."""
        if not isinstance(table, cst.Name):
            return None
        bindings = self.traced.assignments(table)
        if len(bindings) != 1 or not isinstance(bindings[0].scope, GlobalScope):
            return None
        target = self.traced.parent(bindings[0].node)
        assign = self.traced.parent(target) if isinstance(target, cst.AssignTarget) else None
        if not isinstance(assign, cst.Assign) or len(assign.targets) != 1:
            return None
        pairs = self._pairs(assign.value)
        if pairs is None or [k for k, _ in pairs] != list(range(len(pairs))):
            return None
        if not all(map(_is_number, (v for _, v in pairs))):
            return None
        if not self.traced.only_read(table.value, TABLE_READS, ("len", "list")):
            return None
        return len(pairs)

    def _pairs(self, value: cst.BaseExpression) -> list[tuple[object, cst.BaseExpression]] | None:
        """The (key, value) entries of `{k: v, ...}` or `dict([(k, v), ...])`, integer keys
        only."""
        if isinstance(value, cst.Dict):
            entries = [(e.key, e.value) for e in value.elements if isinstance(e, cst.DictElement)]
            if len(entries) != len(value.elements):
                return None
        elif (
            isinstance(value, cst.Call)
            and "builtins.dict" in self.qualified_names(value.func)
            and len(value.args) == 1
            and isinstance(value.args[0].value, cst.List | cst.Tuple)
        ):
            entries = []
            for element in value.args[0].value.elements:
                pair = element.value
                if not isinstance(pair, cst.Tuple) or len(pair.elements) != 2:
                    return None
                entries.append((pair.elements[0].value, pair.elements[1].value))
        else:
            return None
        found: list[tuple[object, cst.BaseExpression]] = []
        for key, item in entries:
            if not isinstance(key, cst.Integer):
                return None
            found.append((key.evaluated_value, item))
        return found

    def _check_elements(self, call: cst.Call, iterable: cst.BaseExpression) -> None:
        """`set([x, y])`, `set(v for v in ...)`, `set(jnp.unique(x))`: not `set(name)`, which
        may be a dict of arrays (its keys are hashed, not its values), unless the name (or
        `self.name`) holds a list or tuple of tracers (`Keys.holds_tracers`)."""
        if isinstance(iterable, cst.Name | cst.Attribute):
            context = self._context(call)
            if context is not None and self.traced.holds_tracers(iterable):
                self._report(call, iterable, MEMBERSHIP, context)
        elif isinstance(iterable, cst.List | cst.Tuple | cst.Set):
            self._check_each(call, iterable.elements)
        elif isinstance(iterable, cst.GeneratorExp | cst.ListComp | cst.SetComp):
            self._check(call, iterable.elt, MEMBERSHIP)
        elif isinstance(iterable, cst.Call | cst.BinaryOperation):
            self._check(call, iterable, MEMBERSHIP)

    def _check_static(self, call: cst.Call) -> None:
        """A traced value in a position the callee's jit declares static. Only in a function a
        transform traces itself (`jit`, `vmap`, a `scan` body): a helper may be called with
        Python values where the analysis cannot tell (`f(*args)` marks every parameter)."""
        found = self.traced.static_parameters(call.func)
        context = self._context(call) if found is not None else None
        if found is None or context is None:
            return
        if not self.traced.entered(context):
            return
        params, static = found
        for index, arg in enumerate(call.args):
            if arg.star:
                return
            param = arg.keyword.value if arg.keyword is not None else None
            if param is None and index < len(params):
                param = params[index]
            if param in static and self._array_valued(arg.value):
                caller = _caller_advice(self, arg.value, context)
                fix, unfixed = self._static_fix(arg.value, context) if caller else (None, "")
                if fix is None:
                    fix, why = self._traced_fix(call, param, arg.value)
                    if why and not caller:
                        unfixed = f"{BUILT_UNFIXED}, or make it a traced argument (not here: {why})"
                unfixed = unfixed or (STATIC_UNFIXED if caller else BUILT_UNFIXED)
                advice = f"`{param}` is static; {STATIC}{caller}"
                advice += f"; {unfixed}" if fix is None else ""
                self._report(call, arg.value, advice, context, fix)
                return

    def _traced_fix(
        self, call: cst.Call, param: str, value: cst.BaseExpression
    ) -> tuple[Fix | None, str]:
        """`param` made a traced argument of the callee (dropped from the static arguments of
        its `@partial(jax.jit, ...)`) when only traced code calls it, `value` is a pytree of
        arrays and the callee only hands `param` to JAX functions (see
        `jaxfix.fixes.static_params`). Else why not ("" when the callee is not in view)."""
        callee = (
            self.traced.function_of_name(call.func) if isinstance(call.func, cst.Name) else None
        )
        if not isinstance(callee, cst.FunctionDef):
            return None, ""
        plan = traced_in_callee(self.traced, callee, param, value)
        if isinstance(plan, str):
            return None, plan
        title = (
            f"{self.traced_title}: `{param}` leaves the static arguments of"
            f" `{callee.name.value}` (only traced code calls it, and it hands the value to JAX"
            " functions); a caller elsewhere that passes a value jax cannot trace fails"
        )
        removed = [plan.decorator.decorator]
        return self.make_fix({plan.decorator: plan.new}, removed_nodes=removed, title=title), ""

    def _static_fix(
        self, value: cst.BaseExpression, context: TracedFunction
    ) -> tuple[Fix | None, str]:
        """The caller's parameters that `value` is made from, made static where it is jitted,
        when every call of it in view passes Python constants for them (see
        `jaxfix.fixes.static_params`); one fix for the caller's findings. Else why not."""
        function = context.node
        if not isinstance(function, cst.FunctionDef):
            return None, ""
        params = tuple(n for n in self.traced.traced_names(value) if n in context.traced_params)
        key = (function, params)
        if key not in self._static_made:
            plan = static_in_caller(self.traced, function, params)
            if isinstance(plan, str):
                self._static_made[key] = (None, f"{STATIC_UNFIXED}: {plan}")
            else:
                listed = ", ".join(f"`{p}`" for p in params)
                title = (
                    f"{self.static_title}: {listed} where `{function.name.value}` is jitted"
                    " (its calls in view pass Python constants); an array passed there fails,"
                    " each new value compiles again"
                )
                if plan.elsewhere:
                    title += f" ({plan.elsewhere})"
                fix = self.make_fix({plan.decorator: plan.new}, plan.imports, title=title)
                self._static_made[key] = (fix, "")
        return self._static_made[key]

    def _array_valued(self, expr: cst.BaseExpression) -> bool:
        """A tracer, not an object that merely holds one (`partial(f, x)` hashes by id)."""
        if isinstance(expr, cst.Call) and self.qualified_names(expr.func) & HASHED_BY_ID:
            return False
        return not isinstance(expr, cst.Lambda) and self._tracer_valued(expr)

    def _context(self, site: cst.CSTNode) -> TracedFunction | None:
        """The traced function `site` runs in, unless only guesses make it traced (see
        `jaxfix.analysis.keys.GUESSED`): a callable handed to some function along with traced
        data (optax's `update(..., metrics_logger=log)` calls `log("lr", 0.3)`), or a custom
        rule."""
        context = self.traced.context_of(site)
        return context if context is not None and self.traced.hashes_traced(context) else None

    def _tracer_valued(self, expr: cst.BaseExpression) -> bool:
        """Whether `expr` is a tracer (or a tuple holding one) where it stands. A name bound by
        a loop is left out (`for k in params` walks a dict's keys), and so are Python values
        made from a tracer (`int(x)`, `x.item()` fail on their own, `str(x)` is a string)."""
        if isinstance(expr, cst.Tuple):
            return any(
                isinstance(e, cst.Element) and self._tracer_valued(e.value) for e in expr.elements
            )
        if isinstance(expr, cst.Name):
            return self.traced.is_traced(expr) and not self._loop_bound(expr)
        if isinstance(expr, cst.Attribute | cst.Subscript):
            return self._tracer_valued(expr.value) and self.traced.is_traced(expr)
        if isinstance(expr, cst.BinaryOperation):
            return self._tracer_valued(expr.left) or self._tracer_valued(expr.right)
        if isinstance(expr, cst.UnaryOperation):
            return self._tracer_valued(expr.expression)
        if isinstance(expr, cst.Call):
            if any(name.startswith("builtins.") for name in self.qualified_names(expr.func)):
                return False
            func = expr.func
            if isinstance(func, cst.Attribute) and func.attr.value in HOST_METHODS:
                return False
        return self.traced.is_traced(expr)

    def _loop_bound(self, name: cst.Name) -> bool:
        """Whether `name` is bound by a loop over something other than an array that a
        `jax.numpy` (or `lax`, `nn`) function returns."""
        for assignment in self.traced.assignments(name):
            node: cst.CSTNode | None = assignment.node
            while isinstance(node, cst.Name | cst.Tuple | cst.List | cst.Element):
                node = self.traced.parent(node)
            if isinstance(node, cst.For | cst.CompFor) and not self._makes_array(node.iter):
                return True
        return False

    def _makes_array(self, expr: cst.BaseExpression) -> bool:
        if not isinstance(expr, cst.Call):
            return False
        return any(n.startswith(ARRAY_NAMESPACES) for n in self.qualified_names(expr.func))

    # ----- what is a dict or a set ----------------------------------------------------------

    def _keyed(self, expr: cst.BaseExpression) -> bool:
        """Whether `expr` is a dict or a set, as far as the module tells."""
        if isinstance(expr, cst.Dict | cst.Set | cst.DictComp | cst.SetComp):
            return True
        if isinstance(expr, cst.Call):
            return bool(self.qualified_names(expr.func) & KEYED_CONSTRUCTORS)
        if isinstance(expr, cst.Attribute):  # `self.table`, made a dict by the class
            values = self.traced.instance_attribute_values(expr)
            return bool(values) and all(
                not isinstance(v, cst.Name | cst.Attribute) and self._keyed(v) for v in values or ()
            )
        if not isinstance(expr, cst.Name):
            return False
        assignments = self.traced.assignments(expr)
        return bool(assignments) and all(map(self._binds_keyed, assignments))

    def _binds_keyed(self, assignment: Assignment) -> bool:
        node = assignment.node
        if isinstance(node, cst.Param):
            starred = isinstance(node.star, str) and bool(node.star)  # `*rows: dict`: a tuple
            annotation = node.annotation
            return (
                not starred and annotation is not None and self._keyed_type(annotation.annotation)
            )
        target = self.traced.parent(node)
        statement = self.traced.parent(target) if isinstance(target, cst.AssignTarget) else target
        if isinstance(statement, cst.Assign):
            return not isinstance(statement.value, cst.Name) and self._keyed(statement.value)
        if isinstance(statement, cst.AnnAssign) and statement.target is node:
            value = statement.value
            if self._keyed_type(statement.annotation.annotation):
                return True
            return value is not None and not isinstance(value, cst.Name) and self._keyed(value)
        return False

    def _keyed_type(self, annotation: cst.BaseExpression) -> bool:
        if isinstance(annotation, cst.Subscript):
            annotation = annotation.value
        return bool(self.qualified_names(annotation) & KEYED_ANNOTATIONS)


def _caller_advice(rule: HashInTraced, value: cst.BaseExpression, context: TracedFunction) -> str:
    """Which caller to make static: the parameters of the enclosing jitted function that the
    value is computed from."""
    params = [n for n in rule.traced.traced_names(value) if n in context.traced_params]
    if not params or not all(r.via is Via.DECORATED and r.name == JIT for r in context.reasons):
        return ""
    names = ", ".join(f'"{p}"' for p in params)
    listed = f"({names},)" if len(params) > 1 else names
    return (
        f" (here: make {', '.join(f'`{p}`' for p in params)} static where `{context.label}`"
        f" is jitted, `jax.jit(..., static_argnames={listed})`)"
    )


def _is_number(value: cst.BaseExpression) -> bool:
    if isinstance(value, cst.UnaryOperation) and isinstance(value.operator, cst.Minus):
        value = value.expression
    return isinstance(value, cst.Integer | cst.Float)


def _code(node: cst.CSTNode) -> str:
    """The source of `node`, its first line cut to `SHOWN` characters."""
    code = source_of(node)
    line = code.splitlines()[0] if code else code
    return line if line == code and len(line) <= SHOWN else line[: SHOWN - 3] + "..."


# `HashInTracedCommand`: this rule as a LibCST codemod (`python -m libcst.tool codemod`).
__getattr__, __dir__ = command_hooks(HashInTraced)
