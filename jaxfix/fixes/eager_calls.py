"""Who may run a traced function on concrete values, and whether that host code needs the NumPy
arrays its NumPy calls give.

JF104 makes a NumPy call on a tracer `jax.numpy`. Where the function also runs eagerly, the
rewritten call returns a float32 `jax.Array` where NumPy gave a float64 `ndarray`: an unsafe
change its fix title names, unless host code in view needs the NumPy array (writes into it,
reads its `.dtype`, hands it to a library jaxfix does not know): then there is no fix. Callers
in other modules, or of a method, are not in view: the title says so.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst
from libcst.metadata import ClassScope, GlobalScope

from jaxfix.analysis.reasons import Via
from jaxfix.fixes.call_sites import only_here, sole_binding
from jaxfix.fixes.syntax import source_of
from jaxfix.fixes.tracing import TracedAnalysis, TracedFunction

# An `ndarray`'s methods that change it in place (a `jax.Array`'s `sort` returns a copy).
IN_PLACE = frozenset(
    {"fill", "sort", "resize", "setflags", "itemset", "put", "partition", "byteswap", "setfield"}
)
# What an `ndarray` has and a `jax.Array` lacks or gives otherwise: in-place methods, memory.
NUMPY_ONLY = IN_PLACE | {"dtype", "flags", "base", "strides", "ctypes", "data", "view"}
NUMPY_ONLY |= {"tofile", "dump"}
# NumPy functions that write into an array argument.
NUMPY_WRITERS = frozenset(
    f"numpy.{name}"
    for name in ("copyto", "put", "place", "putmask", "fill_diagonal", "put_along_axis")
)
# Built-ins that read an array's values (a `jax.Array` gives them the same, in float32).
_READERS = ("print", "len", "str", "repr", "float", "int", "bool", "format", "list", "tuple")
READING_BUILTINS = frozenset(
    f"builtins.{name}"
    for name in (*_READERS, "sorted", "sum", "min", "max", "abs", "round", "enumerate", "zip")
)
# Expressions whose value is a new array made from an operand's values.
_COMPUTED = (
    cst.BinaryOperation,
    cst.UnaryOperation,
    cst.Comparison,
    cst.ComparisonTarget,
    cst.Subscript,
    cst.Index,
    cst.SubscriptElement,
)
_DEPTH = 3  # how many assignments of the result to follow


@dataclass(frozen=True)
class EagerCalls:
    """`blocked`: why a rewrite to `jax.numpy` would break host code in view ("" if none);
    `callers`: who may run the function eagerly ("" if nothing may); `in_view`: whether code
    in view does (not only callers that may exist elsewhere)."""

    blocked: str = ""
    callers: str = ""
    in_view: bool = False


def eager_calls(analysis: TracedAnalysis, function: TracedFunction) -> EagerCalls:
    """Who may call the traced `function` outside a trace, and whether what they do with its
    result needs NumPy (see the module's docs)."""
    node = function.node
    if any(reason.via is Via.DECORATED for reason in function.reasons):
        return EagerCalls()
    outer = analysis.owner_function(node)
    enclosing = analysis.functions.get(outer) if outer is not None else None
    around = eager_calls(analysis, enclosing) if enclosing is not None else EagerCalls()
    if enclosing is not None and around == EagerCalls():
        return EagerCalls()  # defined in code that only runs traced
    passed = {reason.name for reason in function.reasons if reason.via is Via.PASSED}
    if isinstance(node, cst.Lambda):
        call = _given_to(analysis, node)
        if call is not None and analysis.imported_names(call.func) & passed:
            return EagerCalls()
        why = "the lambda may also be called outside a trace"
        return EagerCalls(why, why)
    return _function_calls(analysis, node, passed, around)


def _function_calls(
    analysis: TracedAnalysis, node: cst.FunctionDef, passed: set[str], around: EagerCalls
) -> EagerCalls:
    """A `def`'s uses outside traces; one nested in a function that may run eagerly shares
    that function's callers (what it returns may be what they get)."""
    name = node.name.value
    scope = analysis.scope_of(node)
    binding = sole_binding(scope, node)
    if binding is None:
        why = f"`{name}` is bound more than once"
        return EagerCalls(why, why)
    lines: list[int] = []
    for access in binding.references:
        if analysis.context_of(access.node) is not None:
            continue  # called (or handed on) by traced code
        call = _given_to(analysis, access.node)
        if call is not None and analysis.imported_names(call.func) & passed:
            continue
        line = analysis.line_of(access.node)
        why = _needs_numpy(analysis, access.node)
        if why:
            why = f"`{name}` is also used outside a trace (line {line}), where {why}"
            return EagerCalls(why, in_view=True)
        lines.append(line)
    if isinstance(scope, ClassScope):
        return _method_calls(analysis, name, passed)
    callers = [f"`{name}` is also called outside a trace (line {n})" for n in lines[:1]]
    if isinstance(scope, GlobalScope) and only_here(analysis, node):
        callers.append(f"`{name}` is public: other modules may call it")
    if around.blocked or (around.callers and not callers):
        return around
    return EagerCalls(callers=" and ".join(callers), in_view=bool(lines))


def _method_calls(analysis: TracedAnalysis, name: str, passed: set[str]) -> EagerCalls:
    """A method's calls in the module outside traces (by its name: any receiver), and why one
    needs NumPy; its callers elsewhere are not in view."""
    seen = False
    for attribute in analysis.attributes_named(name):
        if analysis.context_of(attribute) is not None:
            continue
        call = _given_to(analysis, attribute)
        if call is not None and analysis.imported_names(call.func) & passed:
            continue
        why = _needs_numpy(analysis, attribute)
        if why:
            line = analysis.line_of(attribute)
            why = f"`.{name}` is also used outside a trace (line {line}), where {why}"
            return EagerCalls(why, in_view=True)
        seen = True
    why = f"`{name}` is a method: its other callers are not in view"
    return EagerCalls(callers=why, in_view=seen)


def _needs_numpy(analysis: TracedAnalysis, reference: cst.CSTNode) -> str:
    """Why the host code at `reference` (the function's name) needs a NumPy result ("" if it
    does not): it must call the function and use the result in ways a `jax.Array` serves."""
    parent = analysis.parent(reference)
    if not isinstance(parent, cst.Call) or parent.func is not reference:
        return "it is passed on as a value, which jaxfix does not follow"
    return result_needs_numpy(analysis, parent)


def result_needs_numpy(analysis: TracedAnalysis, value: cst.CSTNode, depth: int = 0) -> str:
    """Why host code needs `value` to be a NumPy array ("" if a `jax.Array` serves it): it
    writes into it, reads what only NumPy has, hands it to a function jaxfix does not know, or
    keeps it where jaxfix does not follow."""
    node: cst.CSTNode = value
    while True:
        parent = analysis.parent(node)
        if isinstance(parent, cst.Expr | cst.FormattedStringExpression | cst.If | cst.While):
            return ""  # dropped, formatted (float32 digits), or a test
        if isinstance(parent, _COMPUTED):
            if written(analysis, parent):
                return "its result is written into"
            node = parent
        elif isinstance(parent, cst.Attribute):
            if parent.attr.value in NUMPY_ONLY:
                return f"its result's `.{parent.attr.value}` is used"
            node = parent
        elif isinstance(parent, cst.Call) and node is parent.func:
            node = parent  # a method's result: an array again
        elif isinstance(parent, cst.Arg):
            return _handed_to(analysis, parent)
        elif isinstance(parent, cst.Assign) and node is parent.value:
            return _assigned(analysis, parent, depth)
        elif isinstance(parent, cst.AugAssign):
            return "its result is updated in place" if node is parent.target else ""
        else:
            return "its result goes where jaxfix does not follow it"


def written(analysis: TracedAnalysis, node: cst.CSTNode) -> bool:
    """Whether `node` is what an assignment writes to (`r[0] = v`, `r[0] += v`)."""
    parent = analysis.parent(node)
    if isinstance(parent, cst.AssignTarget):
        return True
    return isinstance(parent, cst.AugAssign | cst.AnnAssign) and parent.target is node


def writes_into(analysis: TracedAnalysis, arg: cst.Arg) -> str:
    """The NumPy call that writes into what `arg` gives it (`np.copyto(r, v)`, `out=r`), as
    written, or ""."""
    call = analysis.parent(arg)
    if not isinstance(call, cst.Call):
        return ""
    names = analysis.imported_names(call.func)
    if names & NUMPY_WRITERS or (arg.keyword is not None and arg.keyword.value == "out"):
        return source_of(call.func)
    return ""


def _handed_to(analysis: TracedAnalysis, arg: cst.Arg) -> str:
    """Why the call `arg` is given to needs a NumPy array ("" for JAX, NumPy's readers and the
    built-ins that read values)."""
    call = analysis.parent(arg)
    if not isinstance(call, cst.Call):
        return "its result goes where jaxfix does not follow it"
    writer = writes_into(analysis, arg)
    if writer:
        return f"`{writer}` writes into its result"
    names = analysis.imported_names(call.func)
    if any(name.startswith(("jax.", "numpy.")) for name in names) or names & READING_BUILTINS:
        return ""
    return f"its result goes to `{source_of(call.func)}`, which may need a NumPy array"


def _assigned(analysis: TracedAnalysis, assign: cst.Assign, depth: int) -> str:
    """Why the names `assign` binds the result to are used as only NumPy arrays can be."""
    targets = [t.target for t in assign.targets]
    if depth >= _DEPTH or not all(isinstance(t, cst.Name) for t in targets):
        return "its result is kept where jaxfix does not follow it"
    for target in targets:
        assert isinstance(target, cst.Name)
        for use in references(analysis, target):
            why = result_needs_numpy(analysis, use, depth + 1)
            if why:
                return why
    return ""


def references(analysis: TracedAnalysis, target: cst.Name) -> list[cst.CSTNode]:
    """The reads of the binding `target` makes (`a` in `a = ...`)."""
    scope = analysis.scope_of(target)
    if scope is None:
        return []
    for assignment in scope.assignments[target.value]:
        if getattr(assignment, "node", None) is target:
            return [access.node for access in assignment.references]
    return []


def _given_to(analysis: TracedAnalysis, node: cst.CSTNode) -> cst.Call | None:
    """The call `node` is an argument of, if it is one."""
    arg = analysis.parent(node)
    call = analysis.parent(arg) if isinstance(arg, cst.Arg) else None
    return call if isinstance(call, cst.Call) else None
