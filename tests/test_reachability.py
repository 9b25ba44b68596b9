"""Reachability with conditions (`jaxfix.analysis.reach`): code that runs only when some facts
of its calling context do not hold is resolved against each context. After a check that raises
on a tracer (`if isinstance(q, Tracer): raise`, or a call of a function that does), or after a
conversion of `q` whose error a `try:` catches and leaves by, nothing runs where `q` is traced;
an `if k is None:` branch does not run where `k` is given a value that is not None (bound by
`partial`, given at the call, or left to a default). Each look-alike that must stay silent has
a traced twin that must still be reported."""

from __future__ import annotations

import textwrap

import pytest

from jaxfix.rules.registry import all_rules
from jaxfix.run.engine import check_text

RULES = all_rules()

HEADER = """\
import dataclasses
from functools import partial
from typing import Optional

import jax
import jax.numpy as jnp
import numpy as np

"""


def codes(body: str) -> list[tuple[int, str]]:
    """The findings in `HEADER + body`, as (line in `body`, code)."""
    text = HEADER + textwrap.dedent(body)
    offset = HEADER.count("\n")
    return [(d.line - offset, d.code) for d in check_text(text, RULES)]


# -- after a check that raises on a tracer ---------------------------------------------------

GUARD = """\
def validate(matrix, scale):
    if isinstance(scale, jax.core.Tracer):
        raise TypeError("scale must be concrete")
    np.asarray(matrix)

"""


def test_code_after_a_guard_that_raises_is_not_reached_where_its_name_is_traced() -> None:
    assert codes(GUARD + "@jax.jit\ndef run(x, s):\n    validate(x, s)\n    return x\n") == []


def test_code_after_a_guard_is_reported_where_its_name_is_concrete() -> None:
    body = GUARD + "@jax.jit\ndef run(x):\n    validate(x, 0.5)\n    return x\n"
    assert codes(body) == [(4, "JF104")]


def test_each_calling_context_is_resolved_on_its_own() -> None:
    # One caller traces `scale` (unreachable there), the other only `matrix`: reported.
    body = GUARD + (
        "@jax.jit\ndef run(x, s):\n    validate(x, s)\n    return x\n\n"
        "@jax.jit\ndef other(x):\n    validate(x, 2.0)\n    return x\n"
    )
    assert codes(body) == [(4, "JF104")]


@pytest.mark.parametrize(
    "check",
    [
        "if not isinstance(scale, (int, float)):\n        raise TypeError(scale)",
        "if hasattr(scale, 'dtype'):\n        raise TypeError(scale)",
        "if isinstance(scale, jax.core.Tracer):\n        raise TypeError(scale)\n"
        "    else:\n        scale = float(scale)",
    ],
    ids=["python-type", "has-dtype", "else"],
)
def test_other_tests_that_leave_only_python_values_after_them(check: str) -> None:
    body = (
        f"def validate(matrix, scale):\n    {check}\n    np.asarray(matrix)\n\n"
        "@jax.jit\ndef run(x, s):\n    validate(x, s)\n    return x\n"
    )
    assert codes(body) == []
    # The twin: a caller that gives `scale` a Python value reaches the conversion.
    twin = body.replace("validate(x, s)", "validate(x, 1.0)")
    assert codes(twin) == [(3 + check.count("\n"), "JF104")]


def test_a_call_that_no_context_reaches_traces_nothing() -> None:
    helper = "def to_host(a):\n    return np.asarray(a)\n\n"
    body = helper + GUARD.replace("np.asarray(matrix)", "to_host(matrix)")
    assert codes(body + "@jax.jit\ndef run(x, s):\n    validate(x, s)\n    return x\n") == []
    twin = body + "@jax.jit\ndef run(x):\n    validate(x, 0.5)\n    return x\n"
    assert codes(twin) == [(2, "JF104")]


def test_a_tracer_that_returns_early_leaves_what_follows_checked() -> None:
    # Only a raise says that what follows is not for tracers: an early return is the
    # function's traced way, and what follows stays checked (`tests/test_analysis.py`).
    body = GUARD.replace('raise TypeError("scale must be concrete")', "return None")
    assert codes(body + "@jax.jit\ndef run(x, s):\n    validate(x, s)\n    return x\n") == [
        (4, "JF104")
    ]


# -- after a call that certainly raises on a traced argument ----------------------------------

CONCRETE = """\
def concrete_scalar(value):
    if isinstance(value, jax.core.Tracer):
        raise TypeError("must be concrete")
    return float(value)

"""


def test_code_after_a_call_that_raises_on_a_traced_argument_is_not_reached() -> None:
    body = CONCRETE + (
        "def validate(matrix, scale):\n"
        "    if concrete_scalar(scale) <= 0:\n"
        "        raise ValueError(scale)\n"
        "    np.asarray(matrix)\n\n"
        "@jax.jit\ndef run(x, s):\n    validate(x, s)\n    return x\n"
    )
    assert codes(body) == []


def test_a_call_given_a_concrete_argument_raises_nothing() -> None:
    body = CONCRETE + (
        "def validate(matrix, scale):\n"
        "    if concrete_scalar(scale) <= 0:\n"
        "        raise ValueError(scale)\n"
        "    np.asarray(matrix)\n\n"
        "@jax.jit\ndef run(x):\n    validate(x, 0.1)\n    return x\n"
    )
    assert codes(body) == [(9, "JF104")]


def test_a_function_that_calls_a_raising_one_raises_too() -> None:
    body = CONCRETE + (
        "def check(scale):\n    concrete_scalar(scale)\n\n"
        "def validate(matrix, scale):\n    check(scale)\n    np.asarray(matrix)\n\n"
        "@jax.jit\ndef run(x, s):\n    validate(x, s)\n    return x\n"
    )
    assert codes(body) == []


@pytest.mark.parametrize(
    "call",
    [
        "if flag and concrete_scalar(scale):\n        pass",
        "scale = concrete_scalar(scale) if flag else scale",
        "try:\n        concrete_scalar(scale)\n    except TypeError:\n        pass",
    ],
    ids=["short-circuit", "conditional", "caught"],
)
def test_a_call_that_may_not_run_or_whose_raise_is_caught_leaves_the_rest_reached(
    call: str,
) -> None:
    body = CONCRETE + (
        f"def validate(matrix, scale, flag):\n    {call}\n    np.asarray(matrix)\n\n"
        "@jax.jit\ndef run(x, s):\n    validate(x, s, True)\n    return x\n"
    )
    assert codes(body) == [(8 + call.count("\n"), "JF104")]


# A conversion in a `try:` that catches its error: a tracer takes the handler's way.
FALLBACK = """\
def fallback(state):
    return jnp.zeros(3)

def weights(state):
    try:
        indices = np.asarray(state.indices)
    except {caught}:
        {handler}
    return float(np.max(state.indices)) * np.ones(int(state.size))

"""


@pytest.mark.parametrize("caught", ["TypeError", "(TypeError, ValueError)", "Exception"])
def test_code_after_a_conversion_whose_error_leaves_the_function_needs_a_concrete_value(
    caught: str,
) -> None:
    """jaxns `expected_log_posterior_weights`: NumPy on the host, a jax fallback for tracers."""
    body = FALLBACK.format(caught=caught, handler="return fallback(state)")
    assert codes(body + "@jax.jit\ndef run(state):\n    return weights(state)\n") == []


@pytest.mark.parametrize("handler", ["pass", "indices = None"])
def test_a_handler_that_goes_on_leaves_what_follows_reached(handler: str) -> None:
    body = FALLBACK.format(caught="TypeError", handler=handler)
    found = codes(body + "@jax.jit\ndef run(state):\n    return weights(state)\n")
    assert found and {line for line, _ in found} == {9}  # the `return` line


def test_a_generator_that_raises_raises_only_when_iterated() -> None:
    body = """\
        def checked(value):
            if isinstance(value, jax.core.Tracer):
                raise TypeError("must be concrete")
            yield value

        def validate(matrix, scale):
            checked(scale)
            np.asarray(matrix)

        @jax.jit
        def run(x, s):
            validate(x, s)
            return x
        """
    assert codes(body) == [(8, "JF104")]


# -- `functools.partial` bindings and arguments that decide `is None` branches -----------------

BODY = """\
def body(x, limit=None):
    if limit is None:
        limit = int(x.sum())
    return x[:limit]

"""


@pytest.mark.parametrize(
    ("applied", "expected"),
    [
        ("jax.jit(partial(body, limit=3))", []),
        ("jax.jit(body)", [(3, "JF104")]),
        ("jax.jit(partial(body, limit=None))", [(3, "JF104")]),
    ],
    ids=["bound-not-none", "unbound", "bound-none"],
)
def test_a_keyword_bound_by_partial_decides_an_is_none_branch(
    applied: str, expected: list[tuple[int, str]]
) -> None:
    assert codes(BODY + f"step = {applied}\n") == expected


def test_is_not_none_decides_the_other_branch() -> None:
    body = """\
        def body(x, limit=None):
            if limit is not None:
                pass
            else:
                limit = int(x.sum())
            return x

        fast = jax.jit(partial(body, limit=3))
        slow = jax.jit(partial(body, limit=None))
        """
    # The second partial traces `body` with `limit` None: that context reaches the `else`.
    assert codes(body) == [(5, "JF104")]
    assert codes(body.replace("slow = jax.jit(partial(body, limit=None))", "")) == []


def test_a_field_declared_without_none_is_not_none() -> None:
    declared = """\
        @dataclasses.dataclass
        class Config:
            limit: int

        def make(config):
            return jax.jit(partial(body, limit=config.limit))
        """
    assert codes(BODY + textwrap.dedent(declared)) == []
    optional = declared.replace("limit: int", "limit: int | None = None")
    assert codes(BODY + textwrap.dedent(optional)) == [(3, "JF104")]


@pytest.mark.parametrize(
    ("call", "expected"),
    [
        ("body(x, limit=2)", []),
        ("body(x, 2)", []),
        ("body(x)", [(3, "JF104")]),
        ("body(x, limit=None)", [(3, "JF104")]),
    ],
    ids=["keyword", "position", "default-none", "given-none"],
)
def test_an_argument_at_the_call_decides_an_is_none_branch(
    call: str, expected: list[tuple[int, str]]
) -> None:
    assert codes(BODY + f"@jax.jit\ndef run(x):\n    return {call}\n") == expected


@pytest.mark.parametrize(
    ("declared", "expected"),
    [
        ("n: int", []),
        ("n: int = 2", []),
        ("n", [(3, "JF104")]),
        ("n: int | None", [(3, "JF104")]),
        ("n: Optional[int]", [(3, "JF104")]),
        ("n: int = None", [(3, "JF104")]),
    ],
    ids=["int", "int-default", "undeclared", "or-none", "optional", "none-default"],
)
def test_a_parameter_declared_without_none_and_passed_on_is_not_none(
    declared: str, expected: list[tuple[int, str]]
) -> None:
    """jaxns `_resample(..., num_samples: int)` calls `resample_indicies(..., S=num_samples)`."""
    caller = f"@partial(jax.jit, static_argnums=1)\ndef run(x, {declared}):\n"
    assert codes(BODY + caller + "    return body(x, limit=n)\n") == expected
    rebound = caller + "    n = None if x.ndim else n\n    return body(x, limit=n)\n"
    assert codes(BODY + rebound) == [(3, "JF104")]  # no longer what it was given


def test_a_default_that_is_not_none_decides_it_where_the_call_leaves_it() -> None:
    body = BODY.replace("limit=None", "limit=4") + "@jax.jit\ndef run(x):\n    return body(x)\n"
    assert codes(body) == []
    rebound = BODY.replace(
        "    if limit is None:", "    limit = None if x.ndim else limit\n    if limit is None:"
    )
    assert codes(rebound + "@jax.jit\ndef run(x):\n    return body(x, 2)\n") == [(4, "JF104")]


def test_a_conditional_expression_on_none_is_decided_too() -> None:
    body = """\
        def body(x, limit=None):
            limit = int(x.sum()) if limit is None else limit
            return x[:limit]

        """
    assert codes(body + "step = jax.jit(partial(body, limit=3))\n") == []
    assert codes(body + "step = jax.jit(body)\n") == [(2, "JF104")]
