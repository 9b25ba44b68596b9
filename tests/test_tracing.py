"""Tests for jaxfix.fixes.tracing: which functions run under a JAX trace, and which values are
tracers.

Every source below is a small runnable program, and every expectation is what jax 0.10.2 does when
it runs it: a parameter is "traced" when jax hands the function a `jax.core.Tracer` (or a container
of them) for it. Programs that check values call `probe(expr)`, a name the analysis knows nothing
about; a harness that runs the programs under jax supplies it. Each positive case sits beside a
look-alike that must stay untraced.
"""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper

from jaxfix.analysis.reasons import Via
from jaxfix.fixes.syntax import FunctionNode
from jaxfix.fixes.tracing import TracedAnalysis

# ----- helpers ------------------------------------------------------------------------------


def analyse(src: str) -> TracedAnalysis:
    module = cst.parse_module(textwrap.dedent(src))
    return TracedAnalysis(MetadataWrapper(module, unsafe_skip_copy=True))


class _InOrder(cst.CSTVisitor):
    """Functions, lambdas, `probe(...)` calls and returns, in source order."""

    def __init__(self) -> None:
        self.functions: list[FunctionNode] = []
        self.probes: list[cst.Call] = []
        self.returns: list[cst.Return] = []

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.functions.append(node)

    def visit_Lambda(self, node: cst.Lambda) -> None:
        self.functions.append(node)

    def visit_Call(self, node: cst.Call) -> None:
        if isinstance(node.func, cst.Name) and node.func.value == "probe":
            self.probes.append(node)

    def visit_Return(self, node: cst.Return) -> None:
        self.returns.append(node)


def _walk(analysis: TracedAnalysis) -> tuple[_InOrder, dict[FunctionNode, str]]:
    """The module's nodes of interest, and a unique label per function ("f", "<lambda>#2")."""
    found = _InOrder()
    analysis.module.visit(found)
    labels: dict[FunctionNode, str] = {}
    seen: dict[str, int] = {}
    for function in found.functions:
        label = function.name.value if isinstance(function, cst.FunctionDef) else "<lambda>"
        seen[label] = seen.get(label, 0) + 1
        labels[function] = label if seen[label] == 1 else f"{label}#{seen[label]}"
    return found, labels


def traced(src: str) -> dict[str, set[str]]:
    """Each traced function's label mapped to the names of its traced parameters. A function
    that merely runs under a trace without receiving a tracer (a helper called with static
    values) is left out, unless a transform entered it directly."""
    analysis = analyse(src)
    _, labels = _walk(analysis)
    return {
        labels[node]: set(entry.traced_params)
        for node, entry in analysis.functions.items()
        if entry.traced_params or entry.reasons[0].via is not Via.CALLED
    }


def _function_label(
    analysis: TracedAnalysis, node: cst.CSTNode, labels: dict[FunctionNode, str]
) -> str:
    owner = analysis.owner_function(node)
    return labels[owner] if owner is not None else "<module>"


def probes(src: str) -> dict[str, bool]:
    """`"function:expr"` for every `probe(expr)` call, mapped to whether `expr` is traced there."""
    analysis = analyse(src)
    found, labels = _walk(analysis)
    result: dict[str, bool] = {}
    for call in found.probes:
        (arg,) = call.args
        key = (
            f"{_function_label(analysis, call, labels)}:{analysis.module.code_for_node(arg.value)}"
        )
        assert key not in result, f"probe {key} appears twice"
        result[key] = analysis.is_traced(arg.value)
    return result


def value_traced(src: str, function: str, expr: str) -> bool:
    """Whether `expr`, written as `probe(expr)` or `return expr` in `function`, is traced there."""
    analysis = analyse(src)
    found, labels = _walk(analysis)
    candidates: list[cst.BaseExpression] = [call.args[0].value for call in found.probes]
    candidates += [ret.value for ret in found.returns if ret.value is not None]
    for candidate in candidates:
        if (
            _function_label(analysis, candidate, labels) == function
            and analysis.module.code_for_node(candidate) == expr
        ):
            return analysis.is_traced(candidate)
    raise AssertionError(f"no probe({expr}) or return {expr} in {function}")


def xfail(reason: str) -> pytest.MarkDecorator:
    return pytest.mark.xfail(reason=reason, strict=True)


# ----- decorators ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "src, expected",
    [
        pytest.param(
            """
            import jax

            @jax.jit
            def f(x, y):
                return x * y

            f(1.0, 2.0)
            """,
            {"f": {"x", "y"}},
            id="jax.jit",
        ),
        pytest.param(
            """
            import types

            jax = types.SimpleNamespace(jit=lambda fn: fn)

            @jax.jit
            def f(x, y):
                return x * y

            f(1.0, 2.0)
            """,
            {},
            id="a local object named jax is not jax",
        ),
        pytest.param(
            """
            import jax as J

            @J.jit
            def f(x):
                return x + 1

            f(1.0)
            """,
            {"f": {"x"}},
            id="import jax as J",
        ),
        pytest.param(
            """
            import numpy as J

            @J.vectorize
            def f(x):
                return x + 1

            f(1.0)
            """,
            {},
            id="another module imported as J",
        ),
        pytest.param(
            """
            from jax import jit

            @jit
            def f(x):
                return x + 1

            f(1.0)
            """,
            {"f": {"x"}},
            id="from jax import jit",
        ),
        pytest.param(
            """
            def jit(fn):
                return fn

            @jit
            def f(x):
                return x + 1

            f(1.0)
            """,
            {},
            id="a user function named jit",
        ),
        pytest.param(
            """
            import jax
            import jax.numpy as jnp

            @jax.pmap
            def f(x):
                return x * 2

            f(jnp.ones((1, 3)))
            """,
            {"f": {"x"}},
            id="jax.pmap",
        ),
        pytest.param(
            """
            import types

            import jax

            def build(jax):
                @jax.pmap
                def f(x):
                    return x * 2

                return f(3.0)

            build(types.SimpleNamespace(pmap=lambda fn: fn))
            """,
            {},
            id="a parameter named jax shadows the module",
        ),
        pytest.param(
            """
            import jax
            import jax.numpy as jnp

            @jax.vmap
            def f(x):
                return x * 2

            f(jnp.ones(3))
            """,
            {"f": {"x"}},
            id="jax.vmap",
        ),
        pytest.param(
            """
            from numpy import vectorize as vmap

            @vmap
            def f(x):
                return x * 2

            f([1.0, 2.0])
            """,
            {},
            id="numpy vectorize imported as vmap",
        ),
        pytest.param(
            """
            import jax

            @jax.grad
            def loss(w, x):
                return w * x

            loss(1.0, 2.0)
            """,
            {"loss": {"w"}},
            id="jax.grad traces argument 0 only",
        ),
        pytest.param(
            """
            import jax

            @jax.named_scope("loss")
            def loss(w, x):
                return w * x

            loss(1.0, 2.0)
            """,
            {},
            id="jax.named_scope does not trace",
        ),
        pytest.param(
            """
            import jax

            @jax.value_and_grad
            def loss(w, x):
                return w * x

            loss(1.0, 2.0)
            """,
            {"loss": {"w"}},
            id="jax.value_and_grad",
        ),
        pytest.param(
            """
            import jax

            @jax.named_call
            def loss(w, x):
                return w * x

            loss(1.0, 2.0)
            """,
            {},
            id="jax.named_call does not trace",
        ),
        pytest.param(
            """
            import jax

            @jax.jacfwd
            def f(x, y):
                return x * y

            f(1.0, 2.0)
            """,
            {"f": {"x"}},
            id="jax.jacfwd",
        ),
        pytest.param(
            """
            import functools

            import jax

            @functools.partial(jax.jacrev, argnums=(0, 1))
            def f(x, y, z):
                return x * y * z

            f(1.0, 2.0, 3.0)
            """,
            {"f": {"x", "y"}},
            id="jax.jacrev with argnums",
        ),
        pytest.param(
            """
            import jax

            @jax.hessian
            def f(x, y):
                return x * x * y

            f(1.0, 2.0)
            """,
            {"f": {"x"}},
            id="jax.hessian",
        ),
        pytest.param(
            """
            import jax

            @jax.profiler.annotate_function
            def f(x, y):
                return x * x * y

            f(1.0, 2.0)
            """,
            {},
            id="jax.profiler.annotate_function does not trace",
        ),
        pytest.param(
            """
            import jax

            @jax.checkpoint
            def f(x):
                return x * 2

            f(1.0)
            """,
            {"f": {"x"}},
            id="jax.checkpoint",
        ),
        pytest.param(
            """
            import functools

            import jax

            @functools.partial(jax.remat, static_argnums=(1,))
            def f(x, n):
                return x * n

            f(1.0, 3)
            """,
            {"f": {"x"}},
            id="jax.remat with static_argnums",
        ),
        pytest.param(
            """
            class Saver:
                def checkpoint(self, fn):
                    return fn

            saver = Saver()

            @saver.checkpoint
            def f(x):
                return x * 2

            f(1.0)
            """,
            {},
            id="a method named checkpoint",
        ),
        pytest.param(
            """
            import jax
            import jax.numpy as jnp

            @jax.custom_jvp
            def f(x):
                return jnp.sin(x)

            @f.defjvp
            def f_jvp(primals, tangents):
                (x,), (t,) = primals, tangents
                return f(x), jnp.cos(x) * t

            jax.jit(jax.grad(f))(1.0)
            """,
            {"f": {"x"}, "f_jvp": {"primals", "tangents"}},
            id="jax.custom_jvp and its defjvp rule",
        ),
        pytest.param(
            """
            class Rules:
                def defjvp(self, rule):
                    return rule

            f = Rules()

            @f.defjvp
            def f_jvp(primals, tangents):
                return primals, tangents

            f_jvp((1.0,), (1.0,))
            """,
            {},
            id="defjvp of an object that is no custom_jvp",
        ),
        pytest.param(
            """
            import jax
            import jax.numpy as jnp

            @jax.custom_jvp
            def f(x):
                return jnp.sin(x)

            f.defjvp(lambda primals, tangents: (f(primals[0]), tangents[0]))

            f(1.0)
            """,
            {},
            id="a custom_jvp function called on the host is not traced",
        ),
        pytest.param(
            """
            import jax
            import jax.numpy as jnp

            @jax.custom_vjp
            def f(x):
                return jnp.sin(x)

            def f_fwd(x):
                return jnp.sin(x), jnp.cos(x)

            def f_bwd(res, g):
                return (res * g,)

            f.defvjp(f_fwd, f_bwd)
            jax.jit(f)(1.0)
            jax.jit(jax.grad(f))(1.0)
            """,
            {"f": {"x"}, "f_fwd": {"x"}, "f_bwd": {"res", "g"}},
            id="jax.custom_vjp and f.defvjp(fwd, bwd)",
        ),
        pytest.param(
            """
            class Rules:
                def defvjp(self, fwd, bwd):
                    return fwd, bwd

            def f_fwd(x):
                return x, x

            def f_bwd(res, g):
                return (res * g,)

            f = Rules()
            f.defvjp(f_fwd, f_bwd)
            f_bwd(*f_fwd(1.0))
            """,
            {},
            id="defvjp of an object that is no custom_vjp",
        ),
        pytest.param(
            """
            import functools

            import jax
            import jax.numpy as jnp

            @functools.partial(jax.custom_jvp, nondiff_argnums=(0,))
            def f(n, x):
                return jnp.sin(x) * n

            @f.defjvp
            def f_jvp(n, primals, tangents):
                (x,), (t,) = primals, tangents
                return f(n, x), jnp.cos(x) * t * n

            jax.jit(jax.grad(lambda x: f(3, x)))(1.0)
            """,
            {"f": {"x"}, "f_jvp": {"primals", "tangents"}, "<lambda>": {"x"}},
            id="a nondiff_argnums argument reaches the jvp rule as it was passed",
        ),
        pytest.param(
            """
            import jax
            import jax.numpy as jnp
            from jax.sharding import PartitionSpec as P

            mesh = jax.make_mesh((1,), ("i",))

            def f(x):
                return x * 2

            jax.shard_map(f, mesh=mesh, in_specs=P(), out_specs=P())(jnp.ones(4))
            """,
            {"f": {"x"}},
            id="jax.shard_map call",
        ),
        pytest.param(
            """
            import jax
            import jax.numpy as jnp
            from jax.sharding import PartitionSpec as P

            mesh = jax.make_mesh((1,), ("i",))

            @jax.shard_map(mesh=mesh, in_specs=P(), out_specs=P())
            def f(x):
                return x * 2

            f(jnp.ones(4))
            """,
            {"f": {"x"}},
            id="jax.shard_map(**options) decorator",
        ),
        pytest.param(
            """
            import functools

            import jax.numpy as jnp
            from jax.experimental.shard_map import shard_map
            from jax.sharding import PartitionSpec as P
            import jax

            mesh = jax.make_mesh((1,), ("i",))

            @functools.partial(shard_map, mesh=mesh, in_specs=P(), out_specs=P())
            def f(x):
                return x * 2

            f(jnp.ones(4))
            """,
            {"f": {"x"}},
            id="jax.experimental.shard_map.shard_map",
        ),
        pytest.param(
            """
            def shard_map(f, **options):
                return f

            @shard_map
            def f(x):
                return x * 2

            f(1.0)
            """,
            {},
            id="a user function named shard_map",
        ),
        pytest.param(
            """
            from jax.experimental.pjit import pjit

            @pjit
            def f(x, y):
                return x * y

            f(1.0, 2.0)
            """,
            {"f": {"x", "y"}},
            id="from jax.experimental.pjit import pjit",
        ),
        pytest.param(
            """
            from concurrent.futures import ThreadPoolExecutor as pjit

            def f(x, y):
                return x * y

            with pjit() as pool:
                pool.submit(f, 1.0, 2.0).result()
            """,
            {},
            id="something else imported as pjit",
        ),
        pytest.param(
            """
            import jax

            my_jit = jax.jit

            @my_jit
            def f(x):
                return x + 1

            f(1.0)
            """,
            {"f": {"x"}},
            id="jax.jit through a module-level alias",
        ),
        pytest.param(
            """
            import jax

            def compiled(fn):
                return jax.jit(fn, static_argnums=1)

            @compiled
            def f(x, n):
                return x * n

            f(1.0, 2)
            """,
            {"f": {"x"}},
            id="a project function returning jax.jit of its argument is a tracing decorator",
        ),
        pytest.param(
            """
            import jax

            def compiled(fn):
                return jax.jit(fn, static_argnums=1)

            def f(x, n):
                return x * n

            def g(y):
                return y

            fast = compiled(f)
            fast(1.0, 2)
            compiled(lambda z: z)(1.0)
            print(compiled(3))
            """,
            {"f": {"x"}, "<lambda>": {"z"}},
            id="such a function called on a function traces it as it would decorate it",
        ),
        pytest.param(
            """
            import jax

            def timed(fn):
                helper = jax.jit(lambda v: v)
                return fn

            def other(fn, g):
                return jax.jit(g)

            @timed
            def f(x):
                return x + 1

            @other
            def h(x):
                return x + 1

            f(1.0)
            """,
            {"<lambda>": {"v"}},
            id="a wrapper that jits something else is not a tracing decorator",
        ),
        pytest.param(
            """
            import jax

            my_jit = jax.jit
            my_jit = print

            @my_jit
            def f(x):
                return x + 1

            f(1.0)
            """,
            {},
            id="an alias bound twice is not followed",
        ),
        pytest.param(
            """
            from jax import jit

            def jit(fn):
                return fn

            @jit
            def f(x):
                return x + 1

            f(1.0)
            """,
            {},
            id="an import shadowed by a later def",
        ),
    ],
)
def test_decorators(src: str, expected: dict[str, set[str]]) -> None:
    assert traced(src) == expected


# ----- static arguments ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "src, expected",
    [
        pytest.param(
            """
            import functools

            import jax

            @functools.partial(jax.jit, static_argnums=1)
            def f(x, n):
                return x * n

            f(1.0, 3)
            """,
            {"f": {"x"}},
            id="functools.partial(jax.jit, static_argnums=1)",
        ),
        pytest.param(
            """
            import functools

            import jax

            @functools.partial(jax.jit, keep_unused=True)
            def f(x, n):
                return x * n

            f(1.0, 3)
            """,
            {"f": {"x", "n"}},
            id="functools.partial(jax.jit, <not static>)",
        ),
        pytest.param(
            """
            from functools import partial

            import jax

            @partial(jax.jit, static_argnames=("n",))
            def f(x, n):
                return x * n

            f(1.0, 3)
            """,
            {"f": {"x"}},
            id="partial(jax.jit, static_argnames=('n',))",
        ),
        pytest.param(
            """
            from functools import partial

            import jax

            @partial(jax.jit, static_argnames=("n",))
            def f(x, *, n, m):
                return x * n * m

            f(1.0, n=3, m=4.0)
            """,
            {"f": {"x", "m"}},
            id="static_argnames for a keyword-only parameter",
        ),
        pytest.param(
            """
            from functools import partial

            import jax

            @partial(jax.jit)
            def f(x, n):
                return x * n

            f(1.0, 3)
            """,
            {"f": {"x", "n"}},
            id="partial(jax.jit) without options",
        ),
        pytest.param(
            """
            import jax

            @jax.jit(static_argnames="n")
            def f(x, n):
                return x * n

            f(1.0, 3)
            """,
            {"f": {"x"}},
            id="jax.jit(static_argnames='n')",
        ),
        pytest.param(
            """
            import jax

            @jax.jit(keep_unused=True)
            def f(x, n):
                return x * n

            f(1.0, 3)
            """,
            {"f": {"x", "n"}},
            id="jax.jit(<not static>)",
        ),
        pytest.param(
            """
            import functools

            import jax

            @functools.partial(jax.jit, static_argnums=(0, 2))
            def f(a, x, b):
                return x * a * b

            f(2, 1.0, 3)
            """,
            {"f": {"x"}},
            id="several static_argnums",
        ),
        pytest.param(
            """
            import functools

            import jax

            @functools.partial(jax.jit, static_argnums=(0, 1))
            def f(a, b):
                return a * b

            f(2, 3)
            """,
            {"f": set()},
            id="every argument static",
        ),
        pytest.param(
            """
            import functools

            import jax

            @functools.partial(jax.jit, static_argnums=-1)
            def f(x, n):
                return x * n

            f(1.0, 3)
            """,
            {"f": {"x"}},
            id="negative static_argnums",
        ),
        pytest.param(
            """
            import functools

            import jax
            import jax.numpy as jnp

            @functools.partial(jax.pmap, static_broadcasted_argnums=1)
            def f(x, n):
                return x * n

            f(jnp.ones((1, 3)), 3)
            """,
            {"f": {"x"}},
            id="pmap static_broadcasted_argnums",
        ),
        pytest.param(
            """
            import jax

            def f(x, n):
                return x * n

            jax.make_jaxpr(f, static_argnums=1)(1.0, 3)
            """,
            {"f": {"x"}},
            id="make_jaxpr static_argnums",
        ),
    ],
)
def test_static_arguments(src: str, expected: dict[str, set[str]]) -> None:
    assert traced(src) == expected


# ----- transform call sites -----------------------------------------------------------------


@pytest.mark.parametrize(
    "src, expected",
    [
        pytest.param(
            """
            import jax

            def f(x):
                return x + 1

            jax.jit(f)(1.0)
            """,
            {"f": {"x"}},
            id="jax.jit(f)",
        ),
        pytest.param(
            """
            def f(x):
                return x + 1

            f(1.0)
            """,
            {},
            id="f called directly",
        ),
        pytest.param(
            """
            import jax

            def f(x, n):
                return x * n

            g = jax.jit(f, static_argnums=1)
            g(1.0, 3)
            """,
            {"f": {"x"}},
            id="g = jax.jit(f, static_argnums=1)",
        ),
        pytest.param(
            """
            import jax

            def f(x, n):
                return x * n

            g = jax.jit(f, static_argnames="n")
            g(1.0, n=3)
            """,
            {"f": {"x"}},
            id="jax.jit(f, static_argnames='n')",
        ),
        pytest.param(
            """
            import jax
            import jax.numpy as jnp

            def f(x):
                return x * 2

            jax.vmap(f)(jnp.ones(3))
            """,
            {"f": {"x"}},
            id="jax.vmap(f)(x)",
        ),
        pytest.param(
            """
            import jax
            import jax.numpy as jnp

            def f(x, y):
                return x * y

            jax.vmap(f, in_axes=(0, None))(jnp.ones(3), 2.0)
            """,
            {"f": {"x"}},
            id="vmap in_axes=(0, None): the unbatched argument stays concrete",
        ),
        pytest.param(
            """
            import jax
            import jax.numpy as jnp

            def f(x, y):
                return x * y

            jax.vmap(f, (None, 0))(2.0, jnp.ones(3))
            """,
            {"f": {"y"}},
            id="vmap positional in_axes",
        ),
        pytest.param(
            """
            import jax

            def loss(w, x):
                return w * x

            jax.grad(loss)(1.0, 2.0)
            """,
            {"loss": {"w"}},
            id="jax.grad(loss)",
        ),
        pytest.param(
            """
            import jax

            def loss(w, x):
                return w * x

            jax.grad(loss, argnums=1)(1.0, 2.0)
            """,
            {"loss": {"x"}},
            id="jax.grad(loss, argnums=1)",
        ),
        pytest.param(
            """
            import jax

            def loss(w, x):
                return w * x

            jax.value_and_grad(loss, argnums=(0, 1))(1.0, 2.0)
            """,
            {"loss": {"w", "x"}},
            id="value_and_grad argnums=(0, 1)",
        ),
        pytest.param(
            """
            import jax.numpy as jnp
            from jax import lax

            def body(carry, x):
                return carry + x, carry

            lax.scan(body, 0.0, jnp.ones(3))
            """,
            {"body": {"carry", "x"}},
            id="lax.scan with from jax import lax",
        ),
        pytest.param(
            """
            import jax

            def body(i, val):
                return val + i

            jax.lax.fori_loop(0, 3, body, 0.0)
            """,
            {"body": {"i", "val"}},
            id="jax.lax.fori_loop",
        ),
        pytest.param(
            """
            from jax.lax import while_loop

            def keep_going(v):
                return v < 3.0

            def step(v):
                return v + 1.0

            while_loop(keep_going, step, 0.0)
            """,
            {"keep_going": {"v"}, "step": {"v"}},
            id="while_loop(cond, body, init)",
        ),
        pytest.param(
            """
            from jax.lax import cond

            def yes(x):
                return x + 1

            def no(x):
                return x - 1

            cond(True, yes, no, 1.0)
            """,
            {"yes": {"x"}, "no": {"x"}},
            id="cond(pred, t, f, x)",
        ),
        pytest.param(
            """
            from jax.lax import switch

            def first(x):
                return x + 1

            def second(x):
                return x - 1

            switch(1, [first, second], 1.0)
            """,
            {"first": {"x"}, "second": {"x"}},
            id="switch(i, [f, g], x)",
        ),
        pytest.param(
            """
            import jax.numpy as jnp
            from jax import lax

            def f(x):
                return x * 2

            lax.map(f, jnp.ones(3))
            """,
            {"f": {"x"}},
            id="lax.map",
        ),
        pytest.param(
            """
            import jax
            import jax.numpy as jnp
            from jax.lax import associative_scan

            def combine(a, b):
                return a + b

            @jax.jit
            def f(xs):
                return associative_scan(combine, xs)

            f(jnp.arange(4.0))
            """,
            {"combine": {"a", "b"}, "f": {"xs"}},
            id="associative_scan under jit",
        ),
        pytest.param(
            """
            import jax.numpy as jnp
            from jax.lax import associative_scan

            def combine(a, b):
                return a + b

            associative_scan(combine, jnp.arange(4.0))
            """,
            {},
            id="associative_scan on the host calls fn eagerly",
        ),
        pytest.param(
            """
            import jax
            import jax.numpy as jnp

            def f(x):
                return x * 2

            jax.eval_shape(f, jnp.ones(3))
            """,
            {"f": {"x"}},
            id="jax.eval_shape",
        ),
        pytest.param(
            """
            import jax

            def f(x):
                return x * 2

            jax.make_jaxpr(f)(1.0)
            """,
            {"f": {"x"}},
            id="jax.make_jaxpr",
        ),
        pytest.param(
            """
            import jax

            def f(x):
                return x * 2

            jax.vjp(f, 1.0)
            """,
            {"f": {"x"}},
            id="jax.vjp",
        ),
        pytest.param(
            """
            import jax

            def f(x):
                return x * 2

            jax.jvp(f, (1.0,), (1.0,))
            """,
            {"f": {"x"}},
            id="jax.jvp",
        ),
        pytest.param(
            """
            import jax

            def f(x):
                return x * 2

            jax.linearize(f, 1.0)
            """,
            {"f": {"x"}},
            id="jax.linearize",
        ),
        pytest.param(
            """
            import jax

            jax.jit(lambda x: x + 1)(1.0)
            """,
            {"<lambda>": {"x"}},
            id="lambda passed to jax.jit",
        ),
        pytest.param(
            """
            import jax.numpy as jnp
            from jax import lax

            lax.scan(lambda c, x: (c + x, c), 0.0, jnp.ones(3))
            """,
            {"<lambda>": {"c", "x"}},
            id="lambda passed to lax.scan",
        ),
        pytest.param(
            """
            import jax

            jax.grad(lambda w, x: w * x, argnums=1)(1.0, 2.0)
            """,
            {"<lambda>": {"x"}},
            id="lambda passed to jax.grad",
        ),
        pytest.param(
            """
            from jax import lax

            lax.cond(
                True,
                lambda x: x + 1,
                lambda x: x - 1,
                1.0,
            )
            """,
            {"<lambda>": {"x"}, "<lambda>#2": {"x"}},
            id="lambdas passed to lax.cond",
        ),
        pytest.param(
            """
            (lambda x: x + 1)(1.0)
            """,
            {},
            id="lambda called directly",
        ),
        pytest.param(
            """
            import functools

            import jax

            def f(cfg, x):
                return x * cfg

            jax.jit(functools.partial(f, 3))(1.0)
            """,
            {"f": {"x"}},
            id="jax.jit(functools.partial(f, cfg)): the bound argument is static",
        ),
        pytest.param(
            """
            import functools

            import jax

            def f(x, n):
                return x * n

            jax.jit(functools.partial(f, n=3))(1.0)
            """,
            {"f": {"x"}},
            id="jax.jit(functools.partial(f, n=3)): a keyword-bound argument is static",
        ),
        pytest.param(
            """
            import jax

            def loss(w, x):
                return w * x

            jax.grad(jax.grad(loss))(1.0, 2.0)
            """,
            {"loss": {"w"}},
            id="jax.grad(jax.grad(loss))",
        ),
        pytest.param(
            """
            import jax

            def loss(w, x):
                return w * x

            jax.jit(jax.grad(loss))(1.0, 2.0)
            """,
            {"loss": {"w", "x"}},
            id="jax.jit(jax.grad(loss)): jit traces every argument",
        ),
        pytest.param(
            """
            import jax
            import jax.numpy as jnp

            def f(x, y):
                return x * y

            jax.jit(jax.vmap(f, in_axes=(0, None)))(jnp.ones(3), 2.0)
            """,
            {"f": {"x", "y"}},
            id="jax.jit(jax.vmap(f, in_axes=(0, None))): jit traces every argument",
        ),
        pytest.param(
            """
            import jax

            class Model:
                def step(self, x):
                    return x * 2

                def run(self, x):
                    return jax.jit(self.step)(x)

            Model().run(1.0)
            """,
            {"step": {"x"}},
            id="jax.jit(self.step)",
        ),
        pytest.param(
            """
            import jax

            class Scale:
                def __init__(self, k):
                    self.k = k

                def __call__(self, x):
                    return x * self.k

                def apply(self, y):
                    return y + self.k

            scale = Scale(2.0)
            per_row = jax.vmap(scale)
            added = jax.jit(scale.apply)
            """,
            {"__call__": {"x"}, "apply": {"y"}},
            id="jax.vmap(instance) / jax.jit(instance.method)",
        ),
        pytest.param(
            """
            import jax

            class Linear:
                def __call__(self, x):
                    return x

                def norm(self, z):
                    return z

            @jax.jit
            def predict(model: Linear, x):
                return model(x), model.norm(x)

            def eager(model: Linear, x):
                return model(x)
            """,
            {"predict": {"model", "x"}, "__call__": {"self", "x"}, "norm": {"self", "z"}},
            id="a parameter annotated with a class: its calls run the methods",
        ),
        pytest.param(
            """
            import jax

            class Linear:
                def __call__(self, x):
                    return x

            def other(x):
                return x

            @jax.jit
            def predict(x):
                model = Linear()
                model = other
                return model(x)
            """,
            {"predict": {"x"}, "other": {"x"}},
            id="a name rebound from an instance to a function: the call runs the function",
        ),
        pytest.param(
            """
            import equinox as eqx
            import jax

            class MLP(eqx.Module):
                def __call__(self, x):
                    return x

            def loss_fn(model, x):
                return jax.vmap(model)(x).sum()

            @eqx.filter_jit
            def make_step(model, x):
                return eqx.filter_grad(loss_fn)(model, x)

            model = MLP()
            make_step(model, 1.0)
            """,
            {"make_step": {"model", "x"}, "loss_fn": {"model", "x"}, "__call__": {"self", "x"}},
            id="an instance handed on through calls, unannotated (the Equinox idiom)",
        ),
        pytest.param(
            """
            import jax

            class MLP:
                def __call__(self, x):
                    return x

            @jax.jit
            def step(model, x):
                return model(x)

            step(MLP(), 1.0)
            """,
            {"step": {"model", "x"}, "__call__": {"self", "x"}},
            id="an instance made in the call's arguments",
        ),
        pytest.param(
            """
            import jax

            class MLP:
                def __call__(self, x):
                    return x

            def double(x):
                return 2 * x

            @jax.jit
            def run(fn, x):
                return fn(x)

            run(MLP(), 1.0)
            m = MLP()
            run(m, 1.0)
            run(double, 1.0)
            """,
            {"run": {"fn", "x"}},
            id="a parameter given an instance and a function: not resolved to the class",
        ),
        pytest.param(
            """
            import threading
            import jax

            def log(total):
                print(total)

            @jax.jit
            def body(total):
                threading.Thread(target=log, args=(total,)).start()
                return total
            """,
            {"body": {"total"}},
            id="a thread's target runs outside the trace (JF105 reports what it is given)",
        ),
    ],
)
def test_call_sites(src: str, expected: dict[str, set[str]]) -> None:
    assert traced(src) == expected


# ----- nested functions, callees and methods ------------------------------------------------


@pytest.mark.parametrize(
    "src, expected",
    [
        pytest.param(
            """
            import jax

            @jax.jit
            def f(x):
                def inner(y, k):
                    return y * k

                return inner(x, 2)

            f(1.0)
            """,
            {"f": {"x"}, "inner": {"y"}},
            id="nested def called with a traced argument",
        ),
        pytest.param(
            """
            import jax
            import jax.numpy as jnp

            @jax.jit
            def f(x):
                def inner(n):
                    return n * 2

                return x * inner(x.shape[0])

            f(jnp.ones(3))
            """,
            {"f": {"x"}},
            id="nested def called with a static argument",
        ),
        pytest.param(
            """
            import jax

            @jax.jit
            def f(x):
                square = lambda y: y * y
                return square(x)

            f(1.0)
            """,
            {"f": {"x"}, "<lambda>": {"y"}},
            id="lambda bound in traced code, called with a traced argument",
        ),
        pytest.param(
            """
            import jax

            def f(x):
                square = lambda y: y * y
                return square(x)

            f(1.0)
            """,
            {},
            id="the same lambda on the host",
        ),
        pytest.param(
            """
            import jax

            def apply(fn, v):
                return fn(v)

            @jax.jit
            def f(x):
                return apply(lambda a: a * 2, x)

            f(1.0)
            """,
            {"apply": {"v"}, "f": {"x"}, "<lambda>": {"a"}},
            id="lambda handed to a same-module helper that applies it",
        ),
        pytest.param(
            """
            import functools
            import jax

            def apply(fn, v):
                return fn(v)

            def scale(k, a):
                return k * a

            def double(a):
                return a * 2

            @jax.jit
            def f(x):
                return apply(double, x) + apply(functools.partial(scale, 3.0), x)

            f(1.0)
            """,
            {"apply": {"v"}, "f": {"x"}, "double": {"a"}, "scale": {"a"}},
            id="function and partial handed to a same-module helper that applies them",
        ),
        pytest.param(
            """
            import jax

            def apply(fn, v):
                return fn(v)

            class Saver:
                def save(self, a):
                    return a

                @jax.jit
                def step(self, x):
                    return apply(self.save, x)

            def save(a):
                return a

            @jax.jit
            def by_keyword(x):
                return apply(v=x, fn=save)
            """,
            {"apply": {"v"}, "save": {"a"}, "step": {"x"}, "save#2": {"a"}, "by_keyword": {"x"}},
            id="a bound method handed over, and a function handed by keyword",
        ),
        pytest.param(
            """
            import jax

            def apply(fn, v):
                return fn(v)

            def f(x):
                return apply(lambda a: a * 2, x)

            f(1.0)
            """,
            {},
            id="lambda handed to a helper on the host",
        ),
        pytest.param(
            """
            import jax

            def apply(fn, v):
                fn = print
                return fn(v)

            def g(a):
                return a

            @jax.jit
            def f(x):
                return apply(g, x)

            f(1.0)
            """,
            {"apply": {"v"}, "f": {"x"}},
            id="a helper that rebinds the parameter before calling it",
        ),
        pytest.param(
            """
            import jax
            import jax.numpy as jnp

            @jax.jit
            def f(tree):
                return jax.tree_util.tree_map(lambda a: a * 2, tree)

            f({"w": jnp.ones(3), "b": 1.0})
            """,
            {"f": {"tree"}, "<lambda>": {"a"}},
            id="tree_map with a lambda inside jit",
        ),
        pytest.param(
            """
            import jax
            import jax.numpy as jnp

            def f(tree):
                return jax.tree_util.tree_map(lambda a: a * 2, tree)

            f({"w": jnp.ones(3), "b": 1.0})
            """,
            {},
            id="tree_map on the host",
        ),
        pytest.param(
            """
            from functools import partial

            import jax

            class Model:
                def __init__(self, scale):
                    self.scale = scale

                @partial(jax.jit, static_argnums=0)
                def step(self, x):
                    return self.helper(x)

                def helper(self, x):
                    return x * self.scale

            Model(2.0).step(1.0)
            """,
            {"step": {"x"}, "helper": {"x"}},
            id="jitted method with static self calls self.helper",
        ),
        pytest.param(
            """
            from functools import partial

            import jax

            class Model:
                @partial(jax.jit, static_argnums=0)
                def step(self, x):
                    return x * self.helper(3)

                def helper(self, n):
                    return n + 1

            Model().step(1.0)
            """,
            {"step": {"x"}},
            id="self.helper called with a literal",
        ),
    ],
)
def test_nested_and_methods(src: str, expected: dict[str, set[str]]) -> None:
    assert traced(src) == expected


@pytest.mark.parametrize(
    "src, expected",
    [
        pytest.param(
            """
            import jax

            def h(z):
                return z + 1

            def g(y):
                return h(y) * 2

            @jax.jit
            def f(x):
                return g(x)

            f(1.0)
            """,
            {"f": {"x"}, "g": {"y"}, "h": {"z"}},
            id="f -> g -> h transitively",
        ),
        pytest.param(
            """
            import jax

            def h(z):
                return z + 1

            def g(y):
                return h(y) * 2

            def f(x):
                return g(x)

            f(1.0)
            """,
            {},
            id="f -> g -> h on the host",
        ),
        pytest.param(
            """
            import functools

            import jax
            import jax.numpy as jnp

            def size_of(n):
                return n * 2

            def literal(k):
                return k + 1

            def static(m):
                return m - 1

            @functools.partial(jax.jit, static_argnums=1)
            def f(x, n):
                return x * size_of(x.shape[0]) * literal(3) * static(n)

            f(jnp.ones(3), 4)
            """,
            {"f": {"x"}},
            id="callees given x.shape[0], a literal and a static argument",
        ),
        pytest.param(
            """
            import jax

            def g(a, b):
                return a * b

            @jax.jit
            def f(x):
                return g(2.0, b=x)

            f(1.0)
            """,
            {"f": {"x"}, "g": {"b"}},
            id="a traced keyword argument",
        ),
        pytest.param(
            """
            import jax

            def helper(v):
                return v * 2

            def loss(w, x):
                return helper(x) * w

            jax.grad(loss)(1.0, 2.0)
            """,
            {"loss": {"w"}},
            id="callee of a grad-only function given the untraced argument",
        ),
        pytest.param(
            """
            import jax

            def helper(v):
                return v * 2

            def loss(w, x):
                return helper(w) * x

            jax.grad(loss)(1.0, 2.0)
            """,
            {"loss": {"w"}, "helper": {"v"}},
            id="callee of a grad-only function given the differentiated argument",
        ),
        pytest.param(
            """
            import jax
            import jax.numpy as jnp

            def g(x):
                return x * 2

            @jax.jit
            def f(x):
                return jax.vmap(g)(x)

            f(jnp.ones(3))
            """,
            {"f": {"x"}, "g": {"x"}},
            id="jax.vmap(g)(x) inside jit",
        ),
        pytest.param(
            """
            import jax
            import jax.numpy as jnp

            def g(a, b):
                return a * b

            @jax.jit
            def f(x, y):
                return jax.vmap(g, in_axes=(0, None))(x, y)

            f(jnp.ones(3), 2.0)
            """,
            {"f": {"x", "y"}, "g": {"a", "b"}},
            id="vmap's unbatched argument inside jit is still a jit tracer",
        ),
        pytest.param(
            """
            import jax

            def loss(w, x):
                return w * x

            @jax.jit
            def f(w, x):
                return jax.grad(loss)(w, x)

            f(1.0, 2.0)
            """,
            {"f": {"w", "x"}, "loss": {"w", "x"}},
            id="jax.grad(loss)(w, x) inside jit: x is a jit tracer",
        ),
        pytest.param(
            """
            import jax

            def loss(w, x):
                return w * x

            def f(w, x):
                return jax.grad(loss)(w, x)

            f(1.0, 2.0)
            """,
            {"loss": {"w"}},
            id="jax.grad(loss)(w, x) on the host",
        ),
    ],
)
def test_same_module_calls(src: str, expected: dict[str, set[str]]) -> None:
    assert traced(src) == expected


# ----- values -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "src, expected",
    [
        pytest.param(
            """
            import jax

            @jax.jit
            def f(x):
                a = x
                b = a * 2
                c = b
                d = 3
                probe(c)
                probe(d)
                return c

            f(1.0)
            """,
            {"f:c": True, "f:d": False},
            id="assignment chain",
        ),
        pytest.param(
            """
            import jax

            @jax.jit
            def f(x):
                a, b = x, 1
                (c, d), e = (1, x), 2.0
                probe(a)
                probe(b)
                probe(c)
                probe(d)
                probe(e)
                return a

            f(1.0)
            """,
            {"f:a": True, "f:b": False, "f:c": False, "f:d": True, "f:e": False},
            id="tuple unpacking pairs targets with values",
        ),
        pytest.param(
            """
            import jax
            import jax.numpy as jnp

            @jax.jit
            def f(x):
                total = 0.0
                for row in x:
                    probe(row)
                    total = total + row
                return total

            f(jnp.ones((2, 3)))
            """,
            {"f:row": True},
            id="for row in x",
        ),
        pytest.param(
            """
            import jax
            import jax.numpy as jnp

            @jax.jit
            def f(x):
                for i, row in enumerate(x):
                    probe(i)
                    probe(row)
                return x

            f(jnp.ones((2, 3)))
            """,
            {"f:i": False, "f:row": True},
            id="enumerate(x) yields a concrete index",
        ),
        pytest.param(
            """
            import jax
            import jax.numpy as jnp

            @jax.jit
            def f(x):
                n = x.shape[0]
                m = len(x)
                k = x.ndim
                s = jnp.shape(x)
                dt = x.dtype
                probe(n)
                probe(m)
                probe(k)
                probe(s)
                probe(dt)
                probe(x.T)
                return x

            f(jnp.ones((2, 3)))
            """,
            {"f:n": False, "f:m": False, "f:k": False, "f:s": False, "f:dt": False, "f:x.T": True},
            id="shape, len, ndim and dtype are static",
        ),
        pytest.param(
            """
            import jax
            import jax.numpy as jnp

            SCALE = 2.0
            TABLE = jnp.ones(3)

            @jax.jit
            def f(x):
                probe(SCALE)
                probe(TABLE)
                probe(x * SCALE)
                return x

            f(1.0)
            """,
            {"f:SCALE": False, "f:TABLE": False, "f:x * SCALE": True},
            id="module constants are not traced",
        ),
        pytest.param(
            """
            import jax
            import jax.numpy as jnp

            @jax.jit
            def f(x):
                z = jnp.zeros(3)
                probe(z)
                return x

            def loss(w):
                z = jnp.zeros(3)
                probe(z)
                return w

            def batched(v):
                z = jnp.zeros(3)
                probe(z)
                return v

            f(1.0)
            jax.grad(loss)(1.0)
            jax.vmap(batched)(jnp.ones(2))
            """,
            {"f:z": True, "loss:z": False, "batched:z": False},
            id="jnp.zeros(3) is a tracer under jit only",
        ),
        pytest.param(
            """
            import jax
            import jax.numpy as jnp

            def helper(v):
                z = jnp.zeros(3)
                probe(z)
                return v + z

            @jax.jit
            def f(x):
                return helper(x)

            f(1.0)
            """,
            {"helper:z": True},
            id="a callee of jit code is staged too",
        ),
        pytest.param(
            """
            import jax
            import numpy as jnp

            @jax.jit
            def f(x):
                z = jnp.zeros(3)
                probe(z)
                return x + z

            f(1.0)
            """,
            {"f:z": False},
            id="import numpy as jnp creates no tracers",
        ),
        pytest.param(
            """
            import jax

            @jax.jit
            def f(x):
                def inner(y):
                    probe(x)
                    return x + y

                return inner(x)

            f(1.0)
            """,
            {"inner:x": True},
            id="closure read of a traced name in a traced nested function",
        ),
        pytest.param(
            """
            import jax

            @jax.jit
            def f(x):
                def inner():
                    probe(x)
                    return x * 2

                return inner()

            f(1.0)
            """,
            {"inner:x": True},
            id="closure read in a nested function called without arguments",
        ),
        pytest.param(
            """
            import jax

            x = 1.0

            def outer():
                def inner():
                    probe(x)
                    return x * 2

                return inner()

            outer()
            """,
            {"inner:x": False},
            id="closure read on the host",
        ),
        pytest.param(
            """
            import jax

            @jax.jit
            def f(trace):
                for name, site in trace.items():
                    probe(name)
                    probe(site)
                names = {n for n in trace}
                probe(names)
                probe(set(trace))
                probe(trace.keys())
                return trace
            """,
            {
                "f:name": False,
                "f:site": True,
                "f:names": False,
                "f:set(trace)": False,
                "f:trace.keys()": False,
            },
            id="dict keys and set elements are hashable: never tracers",
        ),
        pytest.param(
            """
            import jax
            import jax.numpy as jnp

            @jax.jit
            def f(x, names):
                probe(names[0].split("__")[0])
                probe(jnp.dtype(jnp.float16))
                probe(x.astype(jnp.float16))
                return x
            """,
            {
                'f:names[0].split("__")[0]': False,
                "f:jnp.dtype(jnp.float16)": False,
                "f:x.astype(jnp.float16)": True,
            },
            id="str methods and dtypes give Python values, even under jit",
        ),
        pytest.param(
            """
            import jax
            from jax import core

            def not_jax_tracer(x):
                return not isinstance(x, core.Tracer)

            @jax.jit
            def f(x, y):
                if not_jax_tracer(x):
                    probe(x)
                z = float(y) if core.is_concrete(y) else y
                if isinstance(y, core.Tracer):
                    probe(y)
                if x > 0:
                    probe(x + 1)
                return z
            """,
            {"f:x": False, "f:y": False, "f:x + 1": True},
            id="values in a branch of a tracer check are left alone",
        ),
    ],
)
def test_values(src: str, expected: dict[str, bool]) -> None:
    assert probes(src) == expected


def test_value_traced_reads_returns() -> None:
    src = """
        import functools

        import jax

        @functools.partial(jax.jit, static_argnums=1)
        def f(x, n):
            if n:
                return n
            return x
        """
    assert value_traced(src, "f", "x") is True
    assert value_traced(src, "f", "n") is False


# ----- look-alikes: host code and host callbacks -------------------------------------------


@pytest.mark.parametrize(
    "src, expected",
    [
        pytest.param(
            """
            import jax.numpy as jnp

            def helper(x):
                return x * 2

            helper(jnp.ones(3))
            """,
            {},
            id="a function only called on the host",
        ),
        pytest.param(
            """
            import jax
            import numpy as jnp

            @jax.jit
            def f(x):
                return x + jnp.zeros(3)

            f(1.0)
            """,
            {"f": {"x"}},
            id="import numpy as jnp traces nothing more",
        ),
        pytest.param(
            """
            import jax

            def host_fn(v):
                print(v)

            @jax.jit
            def f(x):
                jax.debug.callback(host_fn, x)
                return x

            f(1.0)
            """,
            {"f": {"x"}},
            id="jax.debug.callback runs its function on the host",
        ),
        pytest.param(
            """
            import jax
            import jax.numpy as jnp
            import numpy as np

            def host_fn(v):
                return np.asarray(v * 2, dtype=np.float32)

            @jax.jit
            def f(x):
                shape = jax.ShapeDtypeStruct((), jnp.float32)
                return jax.pure_callback(host_fn, shape, x)

            f(1.0)
            """,
            {"f": {"x"}},
            id="jax.pure_callback runs its function on the host",
        ),
        pytest.param(
            """
            import jax
            import jax.numpy as jnp
            import numpy as np
            from jax.experimental import io_callback

            def host_fn(v):
                return np.asarray(v * 2, dtype=np.float32)

            @jax.jit
            def f(x):
                shape = jax.ShapeDtypeStruct((), jnp.float32)
                return io_callback(host_fn, shape, x)

            f(1.0)
            """,
            {"f": {"x"}},
            id="io_callback runs its function on the host",
        ),
        pytest.param(
            """
            import jax
            from jax._src import callback

            def host_fn(v):
                return v

            @jax.jit
            def f(x):
                return callback.io_callback(host_fn, None, x)
            """,
            {"f": {"x"}},
            id="the internal name of io_callback (jax's own code, pallas) too",
        ),
    ],
)
def test_host_look_alikes(src: str, expected: dict[str, set[str]]) -> None:
    assert traced(src) == expected


def test_static_parameters_of_jitted_callees() -> None:
    """`static_parameters` names what a callee's jit declares static, for a decorated def (also
    `@jax.jit(static_argnums=...)`) and for `g = jax.jit(f, static_argnames=...)`; nothing for
    a jit without static arguments, an unknown callee or another transform."""
    analysis = analyse("""\
        from functools import partial
        import jax

        @partial(jax.jit, static_argnums=1)
        def a(x, n):
            return x * n

        @jax.jit(static_argnames="n")
        def b(x, n):
            return x * n

        def _c(x, size):
            return x

        c = jax.jit(_c, static_argnames=("size",))
        d = jax.jit(_c)
        e = jax.vmap(_c)
        a(1, 2), b(1, 2), c(1, 2), d(1, 2), e(1, 2), f(1, 2)
        """)
    statement = analysis.module.body[-1]
    assert isinstance(statement, cst.SimpleStatementLine)
    expression = statement.body[0]
    assert isinstance(expression, cst.Expr) and isinstance(expression.value, cst.Tuple)
    calls = [element.value for element in expression.value.elements]
    found = [
        analysis.static_parameters(call.func) if isinstance(call, cst.Call) else None
        for call in calls
    ]
    assert found == [
        (["x", "n"], {"n"}),
        (["x", "n"], {"n"}),
        (["x", "size"], {"size"}),
        None,
        None,
        None,
    ]
