"""JF102 cache-on-traced: a memoizing decorator on a function that jax traces."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import ClassVar

import libcst as cst

from jaxfix.analysis.reasons import Reason, Via
from jaxfix.fixes.syntax import source_of
from jaxfix.models.diagnostic import FixSafety
from jaxfix.models.sinks import SinkKind, names_of, rows
from jaxfix.rules.rule import Rule, command_hooks

SINKS = rows(
    SinkKind.CACHE,
    [
        "functools.lru_cache",
        "functools.cache",
        "cachetools.cached",
        *(f"cachetools.func.{name}_cache" for name in ("lru", "lfu", "fifo", "mru", "rr", "ttl")),
    ],
)
# Attributes a cached function has and a plain one lacks: removing the cache would break them.
CACHE_API = frozenset({"cache_info", "cache_clear", "cache_parameters", "cache", "call"})
# `memory.cache` / `cache.memoize()` on objects these constructors made.
CACHE_METHODS: dict[str, frozenset[str]] = {
    "cache": frozenset({"joblib.Memory"}),
    "memoize": frozenset({"diskcache.Cache", "diskcache.FanoutCache", "diskcache.core.Cache"}),
}


class CacheOnTraced(Rule):
    """
    ## What it does
    Finds `functools.lru_cache`, `functools.cache`, `cachetools` decorators,
    `joblib.Memory(...).cache` and `diskcache`'s `memoize` on a function that is jitted itself
    (in either decorator order) or is called from traced code with traced arguments.

    ## Why is this bad?
    A cache hashes or pickles its arguments. Arrays are not hashable and tracers cannot be
    pickled: the call raises `TypeError: unhashable type: 'DynamicJaxprTracer'` (or
    `'jaxlib._jax.ArrayImpl'` when the cache sits outside `jax.jit`), or the `__reduce__`
    `ConcretizationTypeError` for the caches that pickle their keys.

    ## Example
    ```python
    @functools.lru_cache(maxsize=None)
    @jax.jit
    def predict(params, x):
        return params @ x
    ```

    ## Use instead
    ```python
    @jax.jit
    def predict(params, x):
        return params @ x
    ```
    `jax.jit` already caches the compiled computation for each input shape and dtype. A cache
    on a function only called with hashable static values (a factory keyed by a config) is
    correct and is not reported, nor is a `joblib` or `diskcache` cache written *above*
    `jax.jit` of a function nothing else traces: it wraps the jitted function, host code hands
    it concrete arrays, and it pickles them to key them.

    ## Fix safety
    Safe. The decorator is removed, and its import when nothing else uses it. The decorated
    function is traced by jax, which requires it to be pure, so calling it again instead of
    returning a cached result gives the same values; the only difference is the failure.

    ## References
    - https://docs.jax.dev/en/latest/faq.html#jit-and-caching
    - https://docs.python.org/3/library/functools.html#functools.lru_cache
    """

    code = "JF102"
    name = "cache-on-traced"
    summary = "A memoizing cache decorator on a function that jax traces or jits"
    message = "`{cache}` caches `{function}`, which jax traces ({reason}): tracers are unhashable"
    fix_title = "Remove the cache decorator (`jax.jit` already caches compiled code)"
    helper_title = "Remove the cache decorator (a traced value cannot be a cache key)"
    fix_safety = FixSafety.SAFE
    unfixed = "a function that also uses the cache's API (`f.cache_clear()`): remove both by hand"
    reads_users = True  # `f.cache_clear()` elsewhere rules the fix out
    sinks = SINKS
    anchors = names_of(SINKS, SinkKind.CACHE) | set(CACHE_METHODS)
    options: ClassVar[Mapping[str, str]] = {
        "extra-cache-decorators": "The project's own memoizing decorators (`my_lib.memoize`);"
        " the same as `cache` in `[tool.jaxfix.sinks]`."
    }

    def prepare(self) -> None:
        """The cache decorators; who uses a cache's API is found on demand."""
        self._api_users: set[str] | None = None
        self._decorators = self.sink_names(SinkKind.CACHE)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        traced = self.traced.functions.get(node)
        if traced is None or not traced.traced_params:
            return
        host_callers_only = all(r.via is Via.DECORATED for r in traced.reasons)
        for index, decorator in enumerate(node.decorators):
            if not self._is_cache(decorator.decorator):
                continue
            if index == 0 and host_callers_only and self._pickles_keys(decorator.decorator):
                continue  # it wraps the transform: host code hands it values it can pickle
            cache = source_of(decorator.decorator)
            message = self.message.format(
                cache=cache, function=node.name.value, reason=traced.reasons[0]
            )
            if node.name.value in self._cache_api_users():
                message += f"; `{node.name.value}` also uses the cache's API: remove both by hand"
                self.report(decorator, message)
                continue
            fix = self.make_fix(
                {decorator: cst.RemoveFromParent()},
                removed_nodes=[decorator],
                title=self._title(traced.reasons),
            )
            self.report(decorator, message, fix)

    def _title(self, reasons: Sequence[Reason]) -> str:
        """A jitted function's compilations are cached by its jit already; a helper traced
        otherwise (called from traced code, under `vmap`) just cannot be keyed."""
        jitted = any(r.via in (Via.DECORATED, Via.PASSED) and "jit" in r.name for r in reasons)
        return self.fix_title if jitted else self.helper_title

    def _cache_api_users(self) -> set[str]:
        """Names on which the module calls a cache method such as `.cache_clear()`."""
        if self._api_users is None:
            self._api_users = set().union(*map(self.traced.receivers_of, CACHE_API))
        return self._api_users

    def _is_cache(self, expr: cst.BaseExpression) -> bool:
        target = expr.func if isinstance(expr, cst.Call) else expr
        return bool(self.qualified_names(target) & self._decorators) or self._pickles_keys(expr)

    def _pickles_keys(self, expr: cst.BaseExpression) -> bool:
        """`memory.cache` / `cache.memoize()` of a `joblib.Memory` / `diskcache.Cache`: a cache
        that pickles its arguments to key them, which concrete arrays allow (unlike
        `lru_cache`, whose keys must be hashable)."""
        target = expr.func if isinstance(expr, cst.Call) else expr
        if not isinstance(target, cst.Attribute) or target.attr.value not in CACHE_METHODS:
            return False
        makers = CACHE_METHODS[target.attr.value]
        receiver = target.value
        if isinstance(receiver, cst.Call):
            return bool(self.qualified_names(receiver.func) & makers)
        return isinstance(receiver, cst.Name) and self.traced.is_assigned_from(receiver, makers)


# `CacheOnTracedCommand`: this rule as a LibCST codemod (`python -m libcst.tool codemod`).
__getattr__, __dir__ = command_hooks(CacheOnTraced)
