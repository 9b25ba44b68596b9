"""Abstract values: what a name or an expression holds when its function runs.

A value is `STATIC` (a Python value at trace time: shapes, literals, dtypes), `HOST` (a NumPy
array computed from static values), `UNKNOWN`, or `TRACED` on a condition: it is a tracer when
one of its `sources` is, where a source is a parameter of some function (`Param`) or the staging
of a function (`Staged`: inside `jax.jit`, even `jnp.zeros(3)` is a tracer). The condition is a
disjunction: `x + y` is traced when `x` or `y` is. A join of two branches keeps only what holds on
both (the common sources), so that a rule reports only what is *certainly* traced. A source is
a fact of a calling context; `NotNone` is one too, though no value has it as a source: the path
conditions of `jaxfix.analysis.reach` are sets of such facts.
"""

from __future__ import annotations

import enum
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from typing import NamedTuple


class Kind(enum.Enum):
    STATIC = "static"
    HOST = "host array"
    TRACED = "traced"
    UNKNOWN = "unknown"


class Param(NamedTuple):
    """The parameter `name` of the function `function` (a `FunctionId`). Sources are named
    tuples, like `Value`: the analysis makes and hashes them by the hundred thousand."""

    function: str
    name: str


class Staged(NamedTuple):
    """The staging of `function`: arrays it creates are tracers when it is staged."""

    function: str


@dataclass(frozen=True, slots=True)
class NotNone:
    """The parameter `name` of `function` is given a value that is not None (`partial(f,
    k=3)`, `f(x, k=n + 1)`): a fact of a calling context, as `Param` is, for the path
    conditions of `if k is None:` branches (`jaxfix.analysis.reach`); never a value's source.
    Not a named tuple: it would equal the `Param` of the same names."""

    function: str
    name: str


Source = Param | Staged | NotNone
# A jax array made outside the function that reads it (`self.count`, made `jnp.int32(0)` by its
# class's `__init__`): a concrete array, never a tracer itself (no function has this id), but an
# operation on it in a staged function gives one (see `Evaluator.e_BinOp`).
HOST_ARRAY = Staged("<made outside>")


class Value(NamedTuple):
    """An abstract value (immutable: a named tuple, made four times faster than a frozen
    dataclass; the analysis makes hundreds of thousands)."""

    kind: Kind
    sources: frozenset[Source] = frozenset()
    # The values of a tuple or list display, element by element (for unpacking and returns).
    elements: tuple[Value, ...] | None = None
    # The function a name or lambda denotes (its `FunctionId`), for calls and transforms.
    function: str | None = None
    # What the name denotes through imports (`jax.numpy.sum`), for calls and attributes;
    # `<instance>.C` / `<class>.C` for the module's class C, `<bound>` for a bound method.
    qualified: str | None = None
    # What `functools.partial` bound of `function`: leading positions, keywords.
    bound_positions: int = 0
    bound_keywords: frozenset[str] = frozenset()
    # Of those keywords, the ones bound to a value that is certainly not None.
    bound_not_none: frozenset[str] = frozenset()
    entry: int | None = None  # the index of the transform's entry, for a transformed function
    # What iterating it gives, when the iterable says (`enumerate(x)`: an int and a row).
    element: Value | None = None
    # For a bool a test of a name gave (`dynamic = not isinstance(n, int)`): what it tells.
    guard: Guard | None = None
    # An instance of one of the module's dataclasses or named tuples: each field's value, by
    # name, as the constructor was given it (`Metrics(loss=x.mean())` holds a tracer).
    fields: tuple[tuple[str, Value], ...] | None = None
    # Whether it may be a dict whose keys a flatten puts in another order (`True`: `{"h": h,
    # "g": g}`; jax rebuilds a dict with its keys sorted, in a host callback or out of `jit`),
    # or the parameter whose object it is, unchanged (a dict a caller gives: `Facts.reordering`
    # says whether one may give such a dict).
    reorders: bool | Param = False

    def field(self, name: str) -> Value | None:
        """The value of the field `name` of such an instance, when it was given one."""
        return next((value for key, value in self.fields or () if key == name), None)

    def parts(self) -> tuple[Value, ...]:
        """What the value holds: a display's elements, an instance's fields."""
        return (*(self.elements or ()), *(value for _, value in self.fields or ()))

    def resolve(self, traced: Collection[Source]) -> Kind:
        """The kind once it is known which sources are traced."""
        if self.kind is not Kind.TRACED:
            return self.kind
        return Kind.TRACED if any(s in traced for s in self.sources) else Kind.UNKNOWN


# `Value.qualified` of an instance of the module's class `C` (`<instance>.C`), and of the class
# itself (`<class>.C`).
INSTANCE = "<instance>."
CLASS = "<class>."


def instance_class(value: Value) -> str | None:
    """The module's class `value` is an instance of, if it is one."""
    qualified = value.qualified or ""
    return qualified.removeprefix(INSTANCE) if qualified.startswith(INSTANCE) else None


def class_named(value: Value) -> str | None:
    """The module's class `value` is (`<class>.C`), if it is one."""
    qualified = value.qualified or ""
    return qualified.removeprefix(CLASS) if qualified.startswith(CLASS) else None


class Guard(NamedTuple):
    """A test that tells whether the name `name` holds a tracer: under the outcome
    `concrete_when` it holds a Python value; under the other, a tracer when `tracer_otherwise`
    (`isinstance(x, core.Tracer)`), else anything (`isinstance(x, int)`, `hasattr(x, "dtype")`).
    `subject` is the name's value when tested: the test tells nothing once it is rebound (to
    another value object)."""

    name: str
    concrete_when: bool
    tracer_otherwise: bool
    subject: Value | None
    # What the name holds under `concrete_when`: a Python value (None), an instance of a class
    # that is no array type, one of JAX's own objects (see `narrowed_value`).
    narrowed: Value | None = None

    def narrowed_value(self) -> Value:
        """What the name holds where the test says it holds no tracer."""
        return STATIC if self.narrowed is None else self.narrowed

    def unreached_if(self) -> frozenset[Source]:
        """The sources under which the code where the test holds is not reached: the tested
        value's, when there the name holds no tracer at all, nor anything that may hold one
        (an instance of a class keeps its fields: a pytree of tracers passes
        `isinstance(x, Model)`); else none."""
        if self.subject is None or self.subject.kind is not Kind.TRACED:
            return frozenset()
        if self.narrowed is not None and sources_of([self.narrowed]):
            return frozenset()
        return self.subject.sources


STATIC = Value(Kind.STATIC)
HOST = Value(Kind.HOST)
UNKNOWN = Value(Kind.UNKNOWN)
# One of JAX's own objects that are never arrays (`jaxfix.models.jax_objects`): a jaxpr, one of
# its equations or variables, a treedef, a sharding. A Python value at trace time; the mark
# follows its attributes, elements and items (`jaxpr.eqns[0].invars`).
JAX_OBJECT = Value(Kind.STATIC, qualified="<jax object>")
# A function that returns such objects when called (`jax.make_jaxpr(f)`).
JAX_OBJECT_MAKER = Value(Kind.UNKNOWN, qualified="<jax object maker>")


def traced(sources: Iterable[Source]) -> Value:
    """Traced when one of `sources` is; unknown when there is none."""
    found = frozenset(sources)
    return Value(Kind.TRACED, found) if found else UNKNOWN


def sources_of(values: Iterable[Value]) -> frozenset[Source]:
    """Every source of the traced ones among `values` (and of their elements and fields)."""
    found: set[Source] = set()
    for value in values:
        found |= value.sources
        if value.elements or value.fields:
            found |= sources_of(value.parts())
    return frozenset(found)


def combine(values: Iterable[Value]) -> Value:
    """The value of an operation on `values` (`x + y`, `jnp.dot(x, y)`): traced when one of
    them is, static when all are, a host array when one is and the rest are static."""
    values = list(values)
    result = STATIC
    for value in values:  # one pass: the analysis combines the operands of most expressions
        if value.kind is Kind.TRACED or value.elements or value.fields:
            return traced(sources_of(values))
        if value.kind is Kind.HOST:
            result = HOST if result is STATIC else result
        elif value.kind is not Kind.STATIC:
            result = UNKNOWN
    return result


def join(a: Value, b: Value) -> Value:
    """What holds on both of two branches; a dict that may be reordered on either may be on
    the join too (see `reorders`)."""
    if a == b:
        return a
    joined = _join(a, b)
    reorders = _either(a.reorders, b.reorders)
    return joined._replace(reorders=reorders) if reorders else joined


def _either(a: bool | Param, b: bool | Param) -> bool | Param:
    """What may be reordered on one branch or the other: two parameters' objects (or one's
    and a dict) are one of them, which a single mark cannot tell: any may be reordered."""
    if a == b or not b:
        return a
    return b if not a else True


def _join(a: Value, b: Value) -> Value:
    if a.elements is not None and b.elements is not None and len(a.elements) == len(b.elements):
        return Value(Kind.UNKNOWN, elements=tuple(map(join, a.elements, b.elements)))
    if a.kind is Kind.TRACED and b.kind is Kind.TRACED:
        return traced(a.sources & b.sources)
    if a.kind is b.kind and a.kind is not Kind.TRACED:
        same = a.function if a.function == b.function else None
        return Value(
            a.kind, function=same, qualified=a.qualified if a.qualified == b.qualified else None
        )
    return UNKNOWN
