"""JF104's boundaries that the fixtures cannot show without another rule's findings: logging and
metrics calls are JF103's, and the cases where a print is reported but not rewritten. Also the
NumPy / SciPy model table the rule reads, and that it is current."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from jaxfix.models import numpy_scipy
from jaxfix.models.numpy_scipy import Behaviour
from jaxfix.rules.registry import all_rules, find_rule
from jaxfix.run.engine import check_text, fix_text

RULES = all_rules()

RULE = find_rule("JF104")
assert RULE is not None
HEADER = """\
import logging
import pickle
from functools import partial

import jax
import numpy as np
import wandb

logger = logging.getLogger(__name__)


@partial(jax.jit, static_argnames=("writer", "i"))
def step(x, writer, i):
"""


def findings(body: str) -> list[tuple[int, bool]]:
    """(line in `body`, fixable) of each JF104 finding."""
    text = HEADER + textwrap.indent(textwrap.dedent(body) + "\n", "    ") + "    return x\n"
    offset = HEADER.count("\n")
    found = check_text(text, [RULE])
    return [(d.line - offset, d.fix is not None) for d in found]


@pytest.mark.parametrize(
    "body",
    [
        'logging.info("loss %s", float(x))',
        'logger.warning(f"loss {x.item()}")',
        'logger.log(logging.INFO, "x %s", np.asarray(x))',
        'wandb.log({"loss": float(x)})',
        'writer.add_scalar("loss", x.item(), i)',
        'writer.log_metrics({"loss": float(x.sum())})',
        'raise ValueError("bad {}".format(x))',
        'print("step", i, x.shape, len(x), x.ndim, x.dtype)',
        "print(pickle.dumps(x))",  # JF101's: the pickling fails first
    ],
)
def test_left_to_other_rules_or_static(body: str) -> None:
    assert findings(body) == []


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("y = np.log(x)", [(1, True)]),  # `np.log` is NumPy, not a logger's method
        ('print("step", i, "loss", x)', [(1, False)]),  # a static value prints differently
        ('print(f"{x=}")', [(1, False)]),
        ('print("%.3f" % x)', [(1, False)]),
        ("print(x, file=None)", [(1, False)]),
        ("print(float(x))", [(1, True)]),  # jax.debug.print of x prints the same number
        ("print(float(x) + 1)", [(1, False)]),  # the conversion feeds arithmetic first
        ("if np.isnan(x).any():\n    pass", [(1, False)]),
        ("y = np.asarray(x, copy=True)", [(1, False)]),
        ("y = np.add(x, x, x)", [(1, False)]),  # the third positional is NumPy's `out`
        ("y = np.where(x > 0)", [(1, False)]),  # `nonzero`: no fixed shape under jit
        ("y = np.where(x > 0, x, 0.0)", [(1, True)]),
        # Reported since the model table: a namesake, but not known to mean the same.
        ("y = np.nanpercentile(x, 90)", [(1, False)]),  # a namesake that may differ
        ("y = np.percentile(x, 90)", [(1, True)]),  # the same default interpolation
        ("y = np.asarray(x)\ny.sort()", [(1, False)]),  # a `jax.Array` sorts into a copy
        ("y = np.asarray(x)\ny[0] = 1.0", [(1, False)]),  # a `jax.Array` is immutable
        ("y = np.asarray(x)\nz = np.add(x, 1.0, out=y)", [(1, False), (2, False)]),
        ("m = np.isnan(x)\ny = x[m]", [(1, False)]),  # a traced mask: no static shape
        ("i = np.asarray(x, dtype=np.int32)\ny = x[i]", [(1, True)]),  # integer indices
        ("y = np.zeros(x)", [(1, False)]),  # a traced shape
        ("from scipy.stats import t\ny = t.logpdf(x, 3.0)", [(2, False)]),
        ('s = "{}".format(x)', [(1, False)]),
    ],
)
def test_reported_and_whether_fixed(body: str, expected: list[tuple[int, bool]]) -> None:
    assert findings(body) == expected


def test_print_template_escapes_braces_and_keeps_conversions() -> None:
    text = HEADER + '    print("{a}", f"{{b}} {x!r:>8}", x)\n    return x\n'
    fixed = fix_text(text, [RULE], unsafe_fixes=True).text
    assert 'jax.debug.print("{{a}} {{b}} {!r:>8} {}", x, x, ordered=True)' in fixed


HELPER = """\
import jax


def shift(x, axis: int, steps=1):
    axis = int(axis)
    return x * axis + float(steps) + float(x)


@jax.jit
def step(x):
    try:
        n = int(x)
    except jax.errors.ConcretizationTypeError:
        n = 0
    return shift(x, x.ndim, x) + n
"""


def test_conversions_handled_or_of_python_valued_parameters_are_left_alone() -> None:
    # `int(axis)` of an `int`-annotated parameter and `float(steps)` of one defaulting to a
    # literal, in a helper traced only through its caller; `int(x)` inside a `try` that
    # catches the error. `float(x)` of the array parameter is reported.
    found = check_text(HELPER, [RULE])
    assert [(d.line, d.column) for d in found] == [(6, 37)]


@pytest.mark.parametrize(
    ("printed", "expected"),
    [
        ("""'say "hi"', x""", """jax.debug.print('say "hi" {}', x, ordered=True)"""),
        ('rf"\\d {x}"', 'jax.debug.print("\\\\d {}", x, ordered=True)'),
        ('"""a\nb""", x', 'jax.debug.print("a\\nb {}", x, ordered=True)'),
    ],
)
def test_print_template_quotes(printed: str, expected: str) -> None:
    text = HEADER + f"    print({printed})\n    return x\n"
    fixed = fix_text(text, [RULE], unsafe_fixes=True).text
    assert expected in fixed


@pytest.mark.parametrize(
    "body",
    [
        # They call the array's own method or read its shape: they work on a tracer.
        "y = np.sum(x) + np.cumsum(x) + np.reshape(x, -1) + np.argsort(x)",
        "n = np.ndim(x) + np.size(x) + len(np.shape(x))",
        "y = np.percentile(np.arange(4), 90) + np.zeros(x.shape[0])",  # not traced
        "y = np.astype(x, np.int32)",  # fails, but not by converting: unknown to the table
    ],
)
def test_functions_that_work_on_tracers_are_not_reported(body: str) -> None:
    assert findings(body) == []


_CALLBACK = "`jax.pure_callback` with a result shape"


@pytest.mark.parametrize(
    ("body", "error", "advice"),
    [
        ("y = np.sin(x)", "TracerArrayConversionError", "use `jax.numpy.sin`"),
        (
            "y = np.zeros(x)",
            "TracerIntegerConversionError",
            f"use `jax.numpy.zeros` if it fits, or {_CALLBACK}",
        ),
        (
            "import scipy.special\ny = scipy.special.xlogy(x, x)",
            "TracerArrayConversionError",
            "use `jax.scipy.special.xlogy`",
        ),
        (
            "import scipy.special\ny = scipy.special.i0(x)",
            "TracerArrayConversionError",
            f"use `jax.scipy.special.i0` if it fits, or {_CALLBACK}",
        ),
        (
            "import scipy.ndimage\ny = scipy.ndimage.gaussian_filter(x, 1.0)",
            "TracerArrayConversionError",
            f"use {_CALLBACK}, or call it on the jitted function's result",
        ),
    ],
)
def test_message_names_the_error_and_the_namesake(body: str, error: str, advice: str) -> None:
    text = HEADER + textwrap.indent(textwrap.dedent(body) + "\n", "    ") + "    return x\n"
    [found] = check_text(text, [RULE])
    assert f"(`{error}`)" in found.message
    assert found.full_message.endswith(f"; {advice}"), found.full_message


# ----- the model table ---------------------------------------------------------------------

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "numpy_model.py"


def test_model_table_rows() -> None:
    table = numpy_scipy.table()
    sin = numpy_scipy.sink("numpy.sin")
    assert sin is not None and sin.namesake == "jax.numpy.sin"
    assert sin.detail == "TracerArrayConversionError"
    pdf = numpy_scipy.sink("scipy.stats.norm.pdf")
    assert pdf is not None and pdf.namesake == "jax.scipy.stats.norm.pdf"
    assert numpy_scipy.sink("numpy.sum") is None
    assert table["numpy.sum"].behaviour is Behaviour.WORKS
    assert numpy_scipy.sink("numpy.save") is None  # not called: JF101 reports the savers
    assert table["numpy.save"].detail.startswith("skipped")
    assert numpy_scipy.sink("numpy.random.shuffle") is None  # never converted
    assert numpy_scipy.sink("numpy.ndarray.__getitem__") is not None  # `TABLE[i]`
    assert table["numpy.ndarray.__add__"].behaviour is Behaviour.WORKS  # `TABLE + x`
    assert numpy_scipy.converting() == {f for f, r in table.items() if r.behaviour == "converts"}


def test_model_table_header_counts_its_rows() -> None:
    text = (SCRIPT.parent.parent / "jaxfix" / "models" / numpy_scipy.TABLE).read_text()
    table = numpy_scipy.table()
    counts = ", ".join(f"{sum(r.behaviour is b for r in table.values())} {b}" for b in Behaviour)
    assert f"# {counts}, {len(table)} functions\n" in text


@pytest.mark.jax
def test_model_table_is_current() -> None:
    """The committed table is what the script makes under the installed (pinned) jax, NumPy and
    SciPy; on failure, regenerate it with `python scripts/numpy_model.py` and review the diff."""
    check = [sys.executable, str(SCRIPT), "--check"]
    result = subprocess.run(check, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr


EAGER_PATHS = """\
import jax
import numpy as np
{code}
"""


@pytest.mark.parametrize(
    ("code", "why_not"),
    [
        pytest.param("@jax.jit\ndef f(x):\n    return np.sin(x)\n", "", id="decorated"),
        pytest.param("def _f(x):\n    return np.sin(x)\n\ng = jax.jit(_f)\n", "", id="private"),
        pytest.param(
            "def f(x):\n    return np.sin(x)\n\nif __name__ == '__main__':\n    jax.jit(f)(1.0)\n",
            "",
            id="a script's",
        ),
        pytest.param(
            "@jax.jit\ndef f(x):\n    def g(y):\n        return np.sin(y)\n    return g(x)\n",
            "",
            id="defined in traced code",
        ),
        pytest.param("g = jax.vmap(lambda x: np.sin(x))\n", "", id="a lambda handed over"),
        pytest.param(
            "def make():\n    def g(x):\n        return np.sin(x)\n    return jax.jit(g), g\n",
            "`g` is also used outside a trace (line 6), where it is passed on as a value",
            id="escapes its factory",
        ),
        pytest.param(
            "def _f(x):\n    return np.sin(x)\n\ng = jax.jit(_f)\nh = _f(np.ones(2))\nh[0] = 1.0\n",
            "`_f` is also used outside a trace (line 7), where its result is written into",
            id="written into eagerly",
        ),
        pytest.param(
            "def _f(x):\n    return np.sin(x)\n\ng = jax.jit(_f)\nprint(_f(np.ones(2)).dtype)\n",
            "where its result's `.dtype` is used",
            id="its dtype read eagerly",
        ),
        pytest.param(
            "import plot\n\ndef _f(x):\n    return np.sin(x)\n\ng = jax.jit(_f)\n"
            "r = _f(np.ones(2))\nplot.show(r)\n",
            "where its result goes to `plot.show`, which may need a NumPy array",
            id="handed to a library eagerly",
        ),
        pytest.param(
            "def outer(x):\n    def inner(y):\n        return np.sin(y)\n    return inner(x)\n\n"
            "r = outer(np.ones(2))\nr[0] = 3.0\ng = jax.jit(outer)\n",
            "`outer` is also used outside a trace (line 8), where its result is written into",
            id="nested in a function whose eager result is written into",
        ),
    ],
)
def test_numpy_becomes_jax_numpy_only_where_it_never_runs_eagerly(code: str, why_not: str) -> None:
    """On concrete values `jax.numpy` returns a float32 `jax.Array` where NumPy gave float64:
    the rewrite is not made where host code in view needs the NumPy array."""
    (found,) = check_text(EAGER_PATHS.format(code=code), [RULE])
    assert (found.fix is None) is bool(why_not)
    assert (why_not and "(not rewritten: " in found.message and why_not in found.message) or (
        "not rewritten" not in found.message
    )


@pytest.mark.parametrize(
    ("code", "callers"),
    [
        pytest.param(
            "def f(x):\n    return np.sin(x)\n\ng = jax.jit(f)\n", "`f` is public", id="public"
        ),
        pytest.param(
            "def _f(x):\n    return np.sin(x)\n\ng = jax.jit(_f)\nh = _f(np.ones(2))\n",
            "`_f` is also called outside a trace (line 7)",
            id="also called eagerly",
        ),
        pytest.param(
            "class M:\n    def f(self, x):\n        return np.sin(x)\n\n    def g(self):\n"
            "        return jax.jit(self.f)\n",
            "`f` is a method",
            id="a method",
        ),
        pytest.param(
            "T = np.array([1.0, 2.0])\n\ndef f(i):\n    return T[i]\n\ng = jax.jit(f)\n",
            "`f` is public",
            id="a NumPy table's index",
        ),
    ],
)
def test_numpy_becomes_jax_numpy_unsafely_where_it_may_run_eagerly(code: str, callers: str) -> None:
    """Where eager callers are out of view, or use the result as a `jax.Array` serves, the
    rewrite is made and its title says what changes for them."""
    (found,) = check_text(EAGER_PATHS.format(code=code), [RULE])
    assert found.fix is not None and "not rewritten" not in found.message
    assert callers in found.fix.title and "float32 `jax.Array`" in found.fix.title


HOST_STATE = """\
import jax
import jax.numpy as jnp
import numpy as np

ACTS = []


class Recorder:
    def __init__(self):
        self.history = []


REC = Recorder()


@jax.jit
def step(x):
    acts = []
    h = jnp.tanh(x)
    {statement}
    return h.sum()
"""


@pytest.mark.parametrize(
    ("statement", "hoisted"),
    [
        pytest.param("ACTS.append(np.asarray(h))", True, id="module-level list"),
        pytest.param("ACTS.append(float(h.sum()))", True, id="scalar conversion"),
        pytest.param("REC.history.append(np.asarray(h))", True, id="attribute of a module object"),
        pytest.param("acts.append(np.asarray(h))", False, id="a list the function builds"),
        pytest.param("n = ACTS.append(np.asarray(h))", False, id="its result kept"),
    ],
)
def test_a_conversion_in_a_statement_that_only_changes_host_state_moves_to_a_callback(
    statement: str, hoisted: bool
) -> None:
    """There the conversion gets concrete values; `jnp.asarray` would leak a tracer into the
    host state, so a statement that only changes host state is hoisted instead."""
    fixed = fix_text(HOST_STATE.format(statement=statement), RULES, unsafe_fixes=True).text
    assert ("jax.debug.callback(" in fixed) is hoisted
    if hoisted:  # the statement as it was, in the host function
        assert f"\n        {statement}\n" in fixed
    else:  # left as it is: no state outside the function to move the work next to
        assert f"\n    {statement}\n" in fixed


DEVICE_GET = """\
import jax


def to_host(x):
    return jax.device_get(x * 2)


fast = jax.jit(to_host)
{eager}
"""


@pytest.mark.parametrize(
    ("eager", "expected"),
    [
        ("", [5]),  # only traced: the copy never happens
        ("print(fast(1.0), to_host(1.0))", []),  # called eagerly too: it copies there
        ("print(fast(1.0))", [5]),
    ],
)
def test_a_device_get_is_reported_only_where_its_function_never_runs_eagerly(
    eager: str, expected: list[int]
) -> None:
    found = check_text(DEVICE_GET.format(eager=eager), RULES)
    assert [d.line for d in found if d.code == "JF104"] == expected


SOLVE = """\
import jax
import jax.numpy as jnp
import numpy as np
from scipy.optimize import minimize


@jax.jit
def fit(w):
    def objective(c):
        return float(((c - w) ** 2).sum())

    res = minimize(objective, x0={start})
    {tail}
"""


@pytest.mark.parametrize(
    ("start", "tail", "why_not"),
    [
        ("w", "return res", "`res` is used other than through its fields"),
        ("w", "return res.x, objective(w)", "`objective` is also used outside the solve"),
        ("np.asarray(w)", "return res.x", "the starting point is computed by NumPy or SciPy"),
    ],
)
def test_a_solve_is_not_moved_to_a_callback_when_its_rewrite_could_change_the_program(
    start: str, tail: str, why_not: str
) -> None:
    found = [
        d
        for d in check_text(SOLVE.format(start=start, tail=tail), RULES)
        if d.code == "JF104" and d.message.startswith("`minimize`")
    ]
    assert len(found) == 1 and found[0].fix_title is None
    assert f"(not rewritten: {why_not}" in found[0].note


def test_a_solve_reads_its_fields_from_the_callback() -> None:
    fixed = fix_text(
        SOLVE.format(start="w * 2", tail="return res.x + res.fun"), RULES, unsafe_fixes=True
    )
    assert (
        "res_x, res_fun = jax.pure_callback(minimize_on_host, (res_x_like, res_fun_like)"
        in fixed.text
    )
    assert "return res_x + res_fun" in fixed.text
    assert "        def objective(c):" in fixed.text  # moved into the host function


GATED = """\
import pickle

import jax

SNAPSHOTS = []


@jax.jit
def step(params, i):
    if int(i) % 2 == 0:
        {branch}
    return params
"""


@pytest.mark.parametrize(
    ("branch", "gated"),
    [
        ("SNAPSHOTS.append(pickle.dumps(params))", True),
        ("params = params * 2", False),  # traced state: not a gate of host effects
        ("SNAPSHOTS.append(1)\n        params = params * 2", False),
    ],
)
def test_an_if_on_traced_values_moves_to_the_host_only_when_it_gates_host_effects(
    branch: str, gated: bool
) -> None:
    found = check_text(GATED.format(branch=branch), RULES)
    conversion = next(d for d in found if d.code == "JF104" and d.message.startswith("`int`"))
    assert (conversion.fix_title is not None) is gated
    if gated:
        fixed = fix_text(GATED.format(branch=branch), RULES, unsafe_fixes=True).text
        assert "        if int(i) % 2 == 0:\n            SNAPSHOTS.append(" in fixed


@pytest.mark.parametrize(
    ("body", "title"),
    [
        ("    print(float(x.sum()))\n", "Print with `jax.debug.print`, when the compiled"),
        ("    ACTS.append(np.asarray(x))\n", "Move the statement to a host callback"),
        ("    x = np.sin(x)\n", "Call `jax.numpy.sin` in place of `np.sin`"),
        ("    x = x + TABLE[x.argmax()]\n", "Index `jax.numpy.asarray(TABLE)`"),
    ],
    ids=["print", "hoist", "jax-numpy", "index"],
)
def test_each_fix_has_a_title_that_says_what_it_does(body: str, title: str) -> None:
    """Not one sentence naming every kind of fix the rule has (`fix_title`, for the docs)."""
    text = (
        "import jax\nimport jax.numpy as jnp\nimport numpy as np\n\nACTS = []\n"
        f"TABLE = np.arange(4.0)\n\n\n@jax.jit\ndef step(x):\n{body}    return x\n"
    )
    [found] = check_text(text, [RULE])
    assert found.fix_title is not None and found.fix_title.startswith(title), found.fix_title
    assert RULE.fix_title not in found.fix_title
