"""Path conditions: which code runs in which calling context.

The code after `if isinstance(q, jax.core.Tracer): raise ...` (or after a call of a function that
certainly raises on a traced argument, `_concrete_scalar(q)`, or after `np.asarray(q)` in a `try:`
whose handler of the conversion error leaves) runs only when `q` is no tracer, whatever names it
uses; the body of `if k is None:` runs only when `k` is given None. Such code
is *reached unless* one of a set of facts holds (`Source`s: a parameter traced, the function
staged, a parameter given a value that is not None: `NotNone`). The interpreter carries that
set along the statements in the environment under `REACH` (as a traced value whose sources are
the facts: joining two branches keeps the facts common to both, as reaching the join by either
branch needs), and notes it for each node that runs under one (`Module.conditions`). The tracing
resolves a node against each calling context of its function (`Facts.live`): a finding there
is certain only in a context where its value is traced and none of the facts holds; a call that
no context reaches traces nothing (`Facts.reached`). A function summarises the facts about its
parameters under which it certainly raises (`Summary.raises_if`), so that the code after a call
of it is not reached where the call gives it what it raises on.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable

from jaxfix.analysis.summaries import Call, Env, Module, Summary, bind_arguments, defaults_of
from jaxfix.analysis.transform_arguments import annotation_names
from jaxfix.analysis.values import (
    HOST,
    Kind,
    NotNone,
    Param,
    Source,
    Staged,
    Value,
    instance_class,
)
from jaxfix.models import numpy_scipy

# The environment's entry for the facts whose holding makes the code unreachable (no name of
# the program can be spelt so).
REACH = "<reached unless>"


def unless(env: Env) -> frozenset[Source]:
    """The facts under which the code where `env` stands is not reached."""
    held = env.get(REACH)
    return held.sources if held is not None else frozenset()


def reach_unless(env: Env, facts: Iterable[Source]) -> None:
    """From here on, the code is not reached when one of `facts` holds either."""
    found = frozenset(facts)
    if found and not found <= unless(env):
        env[REACH] = Value(Kind.TRACED, unless(env) | found)


def forget(env: Env, facts: frozenset[Source]) -> None:
    """From here on, the code is reached whether `facts` hold or not."""
    left = unless(env) - facts
    if left:
        env[REACH] = Value(Kind.TRACED, left)
    else:
        env.pop(REACH, None)


def own(facts: Iterable[Source], fid: str) -> frozenset[Source]:
    """The facts about `fid` itself: its parameters, its staging."""
    return frozenset(s for s in facts if s.function == fid)


def raised_on(callee: Summary, call: Call, caller: str) -> frozenset[Source]:
    """The facts of the caller under which `call` certainly raises (see `Summary.raises_if`):
    a parameter it raises on given a traced value (one that is a tracer, not a container of
    them), its staging when the caller is staged."""
    if not callee.raises_if:
        return frozenset()
    given = bind_arguments(callee, call)
    found: set[Source] = set()
    for fact in callee.raises_if:
        if isinstance(fact, Param):
            value = given.get(fact.name)
            if value is not None and value.kind is Kind.TRACED and not value.parts():
                found |= value.sources
        elif isinstance(fact, Staged):
            found.add(Staged(caller))
    return frozenset(found)


# What raises a conversion error when its first argument (or its receiver, for the methods) is
# a tracer: Python's conversions, the arrays' `.item()` and `.tolist()`, and NumPy's and SciPy's
# functions that convert (`jaxfix.models.numpy_scipy`, measured under jax).
_CONVERSIONS = frozenset({"builtins.float", "builtins.int", "builtins.complex", "builtins.bool"})
_CONVERTING_METHODS = frozenset({"item", "tolist"})


def conversion_raised_on(call: Call) -> frozenset[Source]:
    """The facts under which `call` certainly raises a conversion error: it converts a value
    that is a tracer (not a container of them) when one of its sources holds. After such a call
    in a `try:` that catches the error (`np.asarray(x)`, then `except TypeError: return
    fallback(x)`), the code runs only where `x` is concrete."""
    if call.callee in _CONVERSIONS or numpy_scipy.sink(call.callee or "") is not None:
        given = call.args[0] if call.args else None
    elif call.method in _CONVERTING_METHODS and not call.args and not call.keywords:
        given = call.receiver
    else:
        return frozenset()
    if given is None or given.kind is not Kind.TRACED or given.parts():
        return frozenset()
    return given.sources


def none_tested(test: ast.expr) -> tuple[set[str], set[str]]:
    """The names that hold None when `test` holds, and those that hold None when it fails
    (`k is None`, `k is not None`, through `not`, `and`, `or`)."""
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.left, ast.Name):
        op, right = test.ops[0], test.comparators[0]
        if isinstance(right, ast.Constant) and right.value is None:
            if isinstance(op, ast.Is):
                return {test.left.id}, set()
            if isinstance(op, ast.IsNot):
                return set(), {test.left.id}
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        when_true, when_false = none_tested(test.operand)
        return when_false, when_true
    if isinstance(test, ast.BoolOp):
        parts = [none_tested(operand) for operand in test.values]
        if isinstance(test.op, ast.And):  # all hold when it holds
            return set().union(*(true for true, _ in parts)), set()
        return set(), set().union(*(false for _, false in parts))  # all fail when it fails
    return set(), set()


def not_none(node: ast.expr, value: Value, module: Module) -> bool:
    """Whether `node`, evaluated to `value`, certainly is not None: a literal other than None,
    a display, a comprehension, a lambda, arithmetic, a comparison, a NumPy array, a function,
    an instance of the module's class, an attribute that the module's classes declare with a
    type that excludes None (`max_occupancy: int = static_field()`), or a parameter declared so
    and passed on unchanged."""
    if isinstance(node, ast.Constant):
        return node.value is not None
    if isinstance(node, _NEVER_NONE):
        return True
    if value == HOST or value.function is not None or value.elements is not None:
        return True
    if instance_class(value) is not None:
        return True
    if isinstance(node, ast.Attribute):
        return node.attr in required_fields(module)
    return isinstance(node, ast.Name) and _required_parameter(node.id, value, module)


def _required_parameter(name: str, value: Value, module: Module) -> bool:
    """`name` is a parameter as its function received it (its function never rebinds it),
    declared with a type that excludes None and without a `None` default (`num_samples: int`),
    as a class' required fields are (`required_fields`)."""
    param = value.reorders
    if not isinstance(param, Param) or param.name != name:
        return False
    scope = module.scopes.get(param.function)
    if scope is None or name in scope.assigned:
        return False  # rebound somewhere in its function: maybe to None
    function = module.nodes.get(param.function)
    if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
        return False
    args = function.args
    declared = [*args.posonlyargs, *args.args, *args.kwonlyargs]
    annotation = next((a.annotation for a in declared if a.arg == name), None)
    default = defaults_of(args).get(name)
    if annotation is None or (isinstance(default, ast.Constant) and default.value is None):
        return False
    return not annotation_names(annotation) & _MAYBE_NONE


_NEVER_NONE = (
    ast.JoinedStr,
    ast.Tuple,
    ast.List,
    ast.Dict,
    ast.Set,
    ast.ListComp,
    ast.SetComp,
    ast.DictComp,
    ast.GeneratorExp,
    ast.Lambda,
    ast.BinOp,
    ast.Compare,
)
# Annotations that let None in (or say nothing): `int | None`, `Optional[int]`, `Any`.
_MAYBE_NONE = frozenset({"None", "Optional", "Union", "Any", "object", "<unknown>"})


def required_fields(module: Module) -> frozenset[str]:
    """Attribute names that the module's classes declare, each time, with an annotation that
    excludes None and no `None` default (by attribute name, as pytree metadata is)."""
    if module.required_fields is not None:
        return module.required_fields
    allowed: set[str] = set()
    refused: set[str] = set()
    for cls in module.classes.values():
        for statement in cls.body:
            if not isinstance(statement, ast.AnnAssign) or not isinstance(
                statement.target, ast.Name
            ):
                continue
            default = statement.value
            none_default = isinstance(default, ast.Constant) and default.value is None
            names = annotation_names(statement.annotation)
            if none_default or names & _MAYBE_NONE or "ClassVar" in names:
                refused.add(statement.target.id)
            else:
                allowed.add(statement.target.id)
    module.required_fields = frozenset(allowed - refused)
    return module.required_fields


def not_none_params(callee: Summary, call: Call, func: Value | None, module: Module) -> set[str]:
    """The parameters of `callee` that `call` certainly gives a value that is not None: an
    argument with that evidence (`not_none_arguments`), a keyword `partial` bound so (`func`,
    the value called), or a default value left to (when no `*args` / `**kwargs` may give it)."""
    node = callee.node
    if isinstance(node, ast.Module):
        return set()
    found: set[str] = set(func.bound_not_none) if func is not None else set()
    given: set[str] = set(func.bound_keywords) if func is not None else set()
    given |= set(callee.positional[: call.bound])
    positions, keywords = not_none_arguments(call, module)
    starred = any(isinstance(a, ast.Starred) for a in call.node.args)
    if not starred:  # (with one, which parameter each argument fills is unknown)
        positional = callee.positional[call.bound :]
        given.update(positional[: len(call.node.args)])
        found.update(positional[i] for i in positions if i < len(positional))
    found.update(keywords)
    for keyword in call.node.keywords:
        if keyword.arg is None:
            return found  # `**kwargs`: what the others are given is unknown
        given.add(keyword.arg)
    if starred:
        return found
    for name, default in defaults_of(node.args).items():
        if name not in given and isinstance(default, ast.Constant) and default.value is not None:
            found.add(name)
    return found


def not_none_arguments(call: Call, module: Module) -> tuple[list[int], list[str]]:
    """The arguments of `call` that are certainly not None (`not_none`): the positions up to a
    starred one, and the keywords up to a `**kwargs`."""
    positions: list[int] = []
    for index, (node, value) in enumerate(zip(call.node.args, call.args, strict=True)):
        if isinstance(node, ast.Starred):
            break
        if not_none(node, value, module):
            positions.append(index)
    keywords: list[str] = []
    for keyword in call.node.keywords:
        if keyword.arg is None:
            break
        if not_none(keyword.value, call.keywords[keyword.arg], module):
            keywords.append(keyword.arg)
    return positions, keywords


def not_none_facts(fid: str, names: Iterable[str]) -> frozenset[Source]:
    """The facts that the parameters `names` of `fid` are given values that are not None."""
    return frozenset(NotNone(fid, name) for name in names)
