"""Evidence of type before alarm (issue #50): a value an `isinstance` test or a `case C():`
narrows to a class that is no array type is no tracer there, and neither are JAX's own objects
(jaxprs, their variables, treedefs). Each program marks the lines that must be reported with a
comment naming the rule; the other lines are look-alikes that must stay silent, the marked ones
their traced twins (the same shapes, but the value really is an array)."""

from __future__ import annotations

import re

import pytest

from jaxfix.rules.registry import all_rules
from jaxfix.run.engine import check_text

RULES = all_rules()


def _expected(text: str) -> set[tuple[int, str]]:
    """The (line, code) pairs the program's `# JFnnn` comments mark."""
    return {
        (number, code)
        for number, line in enumerate(text.splitlines(), start=1)
        for code in re.findall(r"# .*?(JF\d{3})", line)
    }


def _found(text: str, slicing: bool = True) -> set[tuple[int, str]]:
    """Each finding's line, and those of its object's other places (`Diagnostic.related`)."""
    return {
        (line, d.code)
        for d in check_text(text, RULES, slicing=slicing)
        for line in (d.line, *(line for line, _ in d.related))
    }


# A penzai-like unbinding: a leaf that passed `isinstance(leaf, Variable)` is the module's own
# object, and what its method returns is a slot label, not an array; the twins are a leaf
# narrowed to `jax.Array`, and a method whose summary returns the field that holds the array.
UNBIND = """\
import jax


class Variable:
    def __init__(self, label, value):
        self.label = label
        self.value = value

    def get_slot(self):
        return Slot(self.label)

    def get_value(self):
        return self.value


class Slot:
    def __init__(self, label):
        self.label = label


def unbind(tree):
    leaves, treedef = jax.tree_util.tree_flatten(tree, is_leaf=lambda l: isinstance(l, Slot))
    seen = {}
    out = []
    for leaf in leaves:
        if isinstance(leaf, Variable) and leaf.label:
            slot = leaf.get_slot()
            if slot in seen:
                raise ValueError(slot)
            seen[slot] = leaf
            value = leaf.get_value()
            seen[value] = leaf  # JF106
            out.append(slot)
        elif isinstance(leaf, jax.Array):
            total = leaf.sum()
            if total in seen:  # JF106
                raise ValueError(total)
            out.append(leaf)
    return treedef.unflatten(out)


@jax.jit
def f(tree):
    return unbind(tree)
"""

# The class tested decides: the module's plain classes and Python types narrow; array types,
# names imported from elsewhere (an alias of an array type?), `object`, a class deriving from an
# array type or a `Protocol`, an ABC the module registers a class into, and a tuple holding any
# of them do not.
NARROWING = """\
import abc
from typing import Protocol

import jax
import numpy as np
from mylib import ArrayAlias


class Config:
    pass


class Child(Config):
    pass


class Wrapped(jax.Array):
    pass


class HasShape(Protocol):
    shape: tuple


class ArrayLike(abc.ABC):
    pass


ArrayLike.register(jax.Array)


@jax.jit
def f(x, d):
    seen = {}
    if isinstance(x, Config):
        seen[x] = 0
        print(np.asarray(x))
    if isinstance(x, Child):
        seen[x] = 0
    if isinstance(x, (Config, str)):
        seen[x] = 0
    if type(x) is Config:
        seen[x] = 0
    if type(x) != Config:
        return x
    seen[x] = 0
    return x


@jax.jit
def h(x):
    seen = {}
    if not isinstance(x, Config):
        return x
    seen[x] = 0
    return x


@jax.jit
def g(x):
    seen = {}
    if isinstance(x, jax.Array):
        seen[x] = 1  # JF106
    if isinstance(x, ArrayAlias):
        seen[x] = 2  # JF106
    if isinstance(x, object):
        seen[x] = 3  # JF106
    if isinstance(x, Wrapped):
        seen[x] = 4  # JF106
    if isinstance(x, HasShape):
        seen[x] = 5  # JF106
    if isinstance(x, (Config, np.ndarray)):
        seen[x] = 6  # JF106
    if type(x) is np.ndarray:
        seen[x] = 7  # JF106
    if isinstance(x, ArrayLike):
        seen[x] = 9  # JF106
    seen[x] = 8  # JF106
    return x
"""

# An instance narrowed from a traced pytree keeps its fields: a field read is traced as before.
FIELDS = """\
import jax
import numpy as np


class State:
    def __init__(self, count):
        self.count = count


@jax.jit
def f(state):
    if isinstance(state, State):
        np.asarray(state.count)  # JF104
    return state
"""

# `match` with class patterns narrows like `isinstance`, in its case only.
MATCH = """\
import jax
import numpy as np


class Leaf:
    pass


@jax.jit
def f(x):
    seen = {}
    match x:
        case Leaf() as leaf:
            seen[x] = 0
            seen[leaf] = 1
        case str() | Leaf():
            seen[x] = 2
        case jax.Array():
            seen[x] = 3  # JF106
    np.asarray(x)  # JF104
    return x
"""

# A comprehension's `isinstance` filter narrows its element.
COMPREHENSION = """\
import jax
import numpy as np


class Leaf:
    pass


@jax.jit
def f(xs):
    a = [np.asarray(x) for x in xs if isinstance(x, Leaf)]
    b = [np.asarray(x) for x in xs if isinstance(x, jax.Array)]  # JF104
    return a, b
"""

# A distrax-like jaxpr interpreter: its environment is keyed by the jaxpr's variables, which
# `jax.make_jaxpr(f)(x)` gives, not arrays. The twin keys it by the values.
INTERPRETER = """\
import functools

import jax


def make(fun):
    maker = jax.make_jaxpr(fun)

    @functools.wraps(fun)
    def jaxpr_and_consts(x):
        closed = maker(x)
        return closed.jaxpr, closed.literals

    return jaxpr_and_consts


def interpret(jaxpr, consts, x):
    env = {}

    def read(var):
        return env[var]

    def write(var, val):
        env[var] = val

    write(jaxpr.invars[0], x)
    for eqn in jaxpr.eqns:
        invals = [read(v) for v in eqn.invars]
        out = eqn.primitive.bind(*invals, **eqn.params)
        write(eqn.outvars[0], out)
    return [read(v) for v in jaxpr.outvars]


def interpret_by_value(jaxpr, x):
    env = {}

    def write(var, val):
        env[val] = var  # JF106

    write(jaxpr.invars[0], x)
    return env


def inverse(fun):
    jaxpr_fn = make(fun)

    def wrapped(x):
        jaxpr, consts = jaxpr_fn(x)
        return interpret(jaxpr, consts, x)

    return wrapped


@jax.jit
def f(x):
    return inverse(jax.numpy.sin)(x)


@jax.jit
def g(x):
    closed = jax.make_jaxpr(jax.numpy.sin)(x)
    compiled = {closed.jaxpr: closed}
    return interpret_by_value(closed.jaxpr, x), compiled
"""

# JAX's objects by their class and their makers: a variable narrowed by `isinstance`, a treedef.
OBJECTS = """\
import jax
import jax.extend as jex


def depends(v, dependent):
    marked = set()
    if isinstance(v, jex.core.Var) and v in marked:
        return True
    if isinstance(v, jax.Array) and v in marked:  # JF106
        return True
    return False


@jax.jit
def f(x, tree):
    cache = {}
    leaves, treedef = jax.tree_util.tree_flatten(tree)
    cache[treedef] = 1
    cache[leaves[0]] = 2  # JF106
    cache[jax.tree_util.tree_structure(tree)] = 3
    return depends(x, None)


def double(y):
    return y * 2


@jax.make_jaxpr
def halve(y):
    return y / 2


@jax.jit
def g(x):
    closed = jax.make_jaxpr(double)(x)
    table = {closed: 1}
    table[halve(x)] = 2
    table[double(x)] = 3  # JF106
    return table
"""


# A jaxpr that no model makes (another library's helper gives it): what only a jaxpr and its
# equations have (`.eqns`, `.invars`, `.outvars`) says what it is.
WALKED = """\
import jax
from mylib import trace_to_jaxpr


@jax.jit
def f(x):
    jaxpr = trace_to_jaxpr(x)
    env = {}
    for eqn in jaxpr.eqns:
        key = eqn.outvars[0]
        env[key] = x
        env[x] = 1  # JF106
    env[jaxpr.invars[0]] = 2
    return env
"""


@pytest.mark.parametrize(
    "text",
    [
        pytest.param(UNBIND, id="unbinding-variables"),
        pytest.param(NARROWING, id="which-classes-narrow"),
        pytest.param(FIELDS, id="fields-stay-traced"),
        pytest.param(MATCH, id="match-class-patterns"),
        pytest.param(COMPREHENSION, id="comprehension-filter"),
        pytest.param(INTERPRETER, id="jaxpr-interpreter"),
        pytest.param(OBJECTS, id="jax-objects"),
        pytest.param(WALKED, id="jaxpr-attributes"),
    ],
)
def test_only_values_without_evidence_of_a_non_array_type_are_reported(text: str) -> None:
    assert _found(text) == _expected(text)


@pytest.mark.parametrize("text", [UNBIND, NARROWING, MATCH, INTERPRETER, OBJECTS])
def test_the_slice_of_a_file_narrows_as_the_whole_file(text: str) -> None:
    assert _found(text) == _found(text, slicing=False)
