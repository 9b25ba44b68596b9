"""The candidate pass: which top-level statements LibCST must analyse.

It may keep too much (that only costs time) but must never drop a statement that holds a
finding: `test_firstpass` and the fuzzing check that on every fixture and on generated programs.
These cases pin down both sides: what it must keep, and the common host code it rules out.
"""

from __future__ import annotations

import ast
import textwrap

import pytest

from jaxfix.analysis.candidates import HASHED_KEYS, STORES, Candidates
from jaxfix.analysis.candidates_read import collect
from jaxfix.analysis.file import analyse_file
from jaxfix.rules.registry import all_rules

ANCHORS = frozenset().union(*(rule.anchors for rule in all_rules()))


def _of_every_rule(declared: str) -> frozenset[str]:
    """The anchors in the `declared` set (`run_time_anchors`) of every rule that has them."""
    rules = all_rules()
    return frozenset(
        anchor
        for rule in rules
        for anchor in getattr(rule, declared)
        if all(anchor in getattr(r, declared) for r in rules if anchor in r.anchors)
    )


RUN_TIME = _of_every_rule("run_time_anchors")  # count only where code runs
SURE = _of_every_rule("sure_tracer_anchors")  # count only with a tracer that is no guess


def collected(text: str) -> Candidates:
    tree = ast.parse(text)
    return collect(tree, analyse_file(tree, text))


def kept(source: str) -> list[str]:
    """The first line of every top-level statement that is a candidate."""
    text = textwrap.dedent(source)
    tree = ast.parse(text)
    found = collect(tree, analyse_file(tree, text))
    statements = found.statements(ANCHORS, traced_only=True, run_time=RUN_TIME, sure=SURE)
    lines = text.splitlines()
    return [lines[tree.body[index].lineno - 1] for index in sorted(statements)]


KEPT = {
    "a jitted function that pickles": """\
        import jax, pickle
        @jax.jit
        def f(x):
            pickle.dumps(x)
        """,
    "jit through partial and an import alias": """\
        from functools import partial
        from jax import jit as J
        import pickle as P
        @partial(J, static_argnums=0)
        def f(n, x):
            P.dumps(x)
        """,
    "a helper called from traced code, defined after it": """\
        import jax, pickle
        @jax.jit
        def f(x):
            return helper(x)
        def helper(y):
            pickle.dumps(y)
        """,
    "a lambda handed to lax.scan": """\
        from jax import lax
        import numpy as np
        out = lax.scan(lambda c, x: (c, np.save("a.npy", x)), 0, xs)
        """,
    "a lambda applied by tree_map inside traced code": """\
        import jax, pickle
        @jax.jit
        def f(tree):
            return jax.tree_util.tree_map(lambda a: pickle.dumps(a), tree)
        """,
    "a method reached through self": """\
        import jax, pickle
        class Model:
            @jax.jit
            def step(self, x):
                return self.save(x)
            def save(self, x):
                x.tobytes()
        """,
    "a custom_vjp rule registered with defvjp, its primal traced": """\
        import jax, pickle
        f = jax.custom_vjp(lambda x: x)
        def fwd(x):
            pickle.dumps(x)
        f.defvjp(fwd, None)
        jax.jit(jax.grad(f))(1.0)
        """,
    "a cache decorator on a jitted function": """\
        import functools, jax
        @functools.lru_cache
        @jax.jit
        def f(x):
            return x
        """,
    "a serializing method on a traced receiver": """\
        import jax
        @jax.jit
        def f(x):
            return (x + 1).tobytes()
        """,
    "a host conversion inside a formatted log line": """\
        import jax, logging
        @jax.jit
        def f(x):
            logging.info(f"{float(x):.2f}")
        """,
    "an imported serializer under another name": """\
        import jax
        from pickle import dumps as encode
        @jax.vmap
        def f(x):
            encode(x)
        """,
    "an item stored in traced code (STORES)": """\
        import jax
        CACHE = {}
        @jax.jit
        def f(x):
            CACHE["x"] = x
        """,
    "an attribute stored in traced code (STORES)": """\
        import jax, types
        state = types.SimpleNamespace()
        @jax.jit
        def f(x):
            state.last = x
        """,
    "a global rebound in traced code (STORES)": """\
        import jax
        @jax.grad
        def f(x):
            global LAST
            LAST = x
        """,
    "an append to a module list (OUTER)": """\
        import jax
        LOG = []
        @jax.jit
        def f(x):
            LOG.append(x)
        """,
    "an append to an attribute of self, and to a mutable default (OUTER)": """\
        import jax
        class T:
            @jax.jit
            def f(self, x, acc=[]):
                self.history.append(x)
                acc.append(x)
        """,
    "a module-level dict looked up in traced code (hash-in-traced)": """\
        import jax
        TABLE = {0: 1.0}
        @jax.jit
        def f(x):
            return TABLE[x]
        """,
    "a parameter annotated as a dict, and a set display": """\
        import jax
        from typing import Dict
        @jax.jit
        def f(x, table: Dict[int, float]):
            return table.get(x), {x}
        """,
    "a call of a function jitted with static arguments": """\
        import jax
        from functools import partial
        @partial(jax.jit, static_argnums=1)
        def g(x, n):
            return x * n
        @jax.jit
        def f(x):
            return g(x, x)
        """,
    "an array result kept in a closure": """\
        import jax, jax.numpy as jnp
        def make():
            last = None
            @jax.jit
            def step(x):
                nonlocal last
                last = jnp.sum(x)
                return x
            return step
        """,
    "an attribute of `self` of a plain class": """\
        import jax
        class Scaled:
            def __call__(self, x):
                self.out = x * 2
                return self.out
        scaled = Scaled()
        g = jax.jit(lambda x: scaled(x))
        """,
    "a tracer formatted into a template a name holds": """\
        import jax
        TEMPLATE = "value: {}"
        @jax.jit
        def f(x):
            text = TEMPLATE.format(x)
            return x
        """,
    "a tracer formatted into a string that is kept": """\
        import jax
        @jax.jit
        def f(x):
            text = "value: {}".format(x)
            return x
        """,
    "a static argument given a tracer by the jitted function itself": """\
        import jax
        from functools import partial
        @partial(jax.jit, static_argnums=0)
        def run(f, x):
            return f(x)
        @jax.jit
        def outer(x):
            return run(jax.numpy.sin(x), x)
        """,
    "a dict indexed by a tracer in a loop body": """\
        import jax, jax.numpy as jnp
        def precondition(xs, m):
            alphas = {0: 1.0}
            def left(i, u):
                return u * alphas[i]
            return jax.lax.fori_loop(0, m, left, xs)
        """,
    "sets of tracers: a display, and what a jnp function returns": """\
        import jax, jax.numpy as jnp
        @jax.jit
        def f(x):
            seen = frozenset({x})
            return set(jnp.unique(x))
        """,
    "a dict attribute of the method's `self`": """\
        import jax
        class Memo:
            def __init__(self):
                self.table = {}
            @jax.jit
            def lookup(self, x):
                return self.table.get(x)
        """,
    "a print in a function `jax.eval_shape` and `jax.jit` trace": """\
        import jax
        def shapes(x):
            print("tracing", x)
            return x * 2
        out = jax.eval_shape(shapes, 1.0)
        run = jax.jit(shapes)
        """,
    "an array converted in a lambda that `tree_map` applies": """\
        import jax
        def select(tree):
            return jax.tree_util.tree_map(lambda x: x if bool(x.sum()) else None, tree)
        @jax.jit
        def f(tree):
            return select(tree)
        """,
    "a file that traced code opens (MADE)": """\
        import jax
        @jax.jit
        def f(x):
            with open("log.txt", "a") as log:
                log.write(f"{x}")
        """,
    "a file that traced code opens to write, by a mode or a flag that may write (MADE)": """\
        import jax, shelve
        @jax.jit
        def f(x, mode):
            with open("log.txt", mode=mode) as log:
                log.write(f"{x}")
        @jax.jit
        def g(x):
            with open("log.txt", "r+") as log:
                log.write(f"{x}")
        @jax.jit
        def h(x):
            with shelve.open("db") as db:
                db["x"] = x
        """,
    "a file or a pool that a top-level statement makes, used in traced code (BOUND)": """\
        import jax
        from concurrent.futures import ThreadPoolExecutor
        LOG = open("log.txt", "w")
        POOL = ThreadPoolExecutor(2)
        @jax.jit
        def f(x):
            LOG.write(str(x))
        @jax.jit
        def g(x):
            return list(POOL.map(abs, x))
        """,
}

DROPPED = {
    "files that traced code opens to be read only, by their mode, a shelf's flag or default": """\
        import gzip, jax, json, shelve
        @jax.jit
        def f(x):
            with open("config.json") as config:
                json.load(config)
            with open("log.txt", mode="rb") as log:
                log.read()
            with gzip.open("data.gz") as data:
                data.read()
            with shelve.open("db", "r") as db:
                db["x"]
            return x
        """,
    "a custom_vjp function and its rule, the function only called on the host": """\
        import jax, pickle
        f = jax.custom_vjp(lambda x: x)
        def fwd(x):
            pickle.dumps(x)
        f.defvjp(fwd, None)
        @jax.custom_jvp
        def g(x):
            return pickle.dumps(x)
        f(1.0), g(1.0)
        """,
    "a call of a function jitted with static arguments, given tracers only where it traces": """\
        import jax
        from functools import partial
        @partial(jax.jit, static_argnums=1)
        def g(x, n):
            return x * n
        @jax.jit
        def f(x):
            return g(x, 3)
        """,
    "methods named like mutators whose value is used, on an item, or undone by a finally": """\
        import jax
        OPT = make()
        STACK = []
        @jax.jit
        def f(x, i):
            updates, state = OPT.update(x, i)
            y = OPT.rows[0].append(x)
            STACK.append(x)
            try:
                return x.at[i].add(x)
            finally:
                STACK.pop()
        """,
    "a cached helper that traced code calls with Python values only (jax dtypes.py)": """\
        import functools, jax
        @functools.lru_cache
        def canonical(dtype):
            return dtype
        @jax.jit
        def f(x):
            return x.astype(canonical("float32"))
        """,
    "a traced array indexed by a tracer, its name a dict elsewhere (optax hungarian)": """\
        import jax
        def host():
            path = {}
            return path
        @jax.jit
        def f(path, j):
            return path[j]
        """,
    "NumPy given only a traced value's shape (jax lax_numpy swapaxes)": """\
        import jax
        import numpy as np
        @jax.jit
        def f(a):
            perm = np.arange(np.ndim(a))
            return a.transpose(perm)
        """,
    "a store into what the enclosing traced function made": """\
        import jax
        @jax.jit
        def f(x):
            acc = {}
            def body(i, carry):
                acc["sum"] = carry
                return carry + x
            return jax.lax.fori_loop(0, 3, body, x)
        """,
    "a serializing method on what is not known to be a tracer": """\
        import jax
        @jax.jit
        def f(x):
            return make().tobytes()
        """,
    "pickling on the host": """\
        import jax, pickle
        def save(x):
            pickle.dumps(x)
        jax.jit(lambda x: x)
        """,
    "a module-level pickle": """\
        import jax, pickle
        BLOB = pickle.dumps(jax.jit)
        """,
    "functions given to builtins and other `map`s are not traced": """\
        import jax, pickle
        from concurrent.futures import ThreadPoolExecutor
        def save(x):
            pickle.dumps(x)
        list(map(save, [1]))
        ThreadPoolExecutor().map(save, [1])
        jax.tree_util.tree_map(save, {"a": 1})
        """,
    "a look-alike transform that is not jax's": """\
        import pickle
        from orbax import checkpoint
        @checkpoint
        def f(x):
            pickle.dumps(x)
        """,
    "a cache decorator of another library, on traced code": """\
        import jax
        from jax._src.util import cache
        @cache()
        def shapes(x):
            return x
        @jax.jit
        def f(x):
            return shapes(x)
        """,
    "containers a traced function builds, or receives, itself (OUTER, STORES)": """\
        import jax
        @jax.jit
        def f(x, ys, *more):
            xs = []
            xs.append(x)
            ys.append(x)
            for z in more:
                z.update(x)
            out = {}
            out["a"] = x
            with make_handle("f") as h:  # (`open` is JF101's: traced code opening a file)
                h.seen = x
            return xs
        """,
    "a top-level name bound twice, or shadowed by a local, is not BOUND": """\
        import jax
        from concurrent.futures import ThreadPoolExecutor
        POOL = ThreadPoolExecutor(2)
        POOL = None
        LOG = open("log.txt", "w")
        @jax.jit
        def f(x):
            return list(POOL.map(abs, x))
        @jax.jit
        def g(x, LOG):
            LOG.write(x)
        """,
    "an anchor name that is not called": """\
        import jax
        @jax.jit
        def f(x, dumps):
            return dumps
        """,
    "an item of an attribute no code makes a container (a trace's frame)": """\
        import jax
        class Trace:
            def __init__(self, frame):
                self.frame = frame
            def write(self, var, x):
                self.frame.table[var] = x
        def f(x):
            return Trace(make_frame()).write("v", x)
        g = jax.jit(f)
        """,
    "static results of unknown calls kept in a closure": """\
        import jax
        def make():
            treedef = None
            @jax.jit
            def step(x):
                nonlocal treedef
                treedef = jax.tree_util.tree_structure(x)
                return x
            return step
        """,
    "a tuple target written through `self`": """\
        import jax
        class Model:
            @jax.jit
            def split(self, x):
                self.a, self.b = x, x
                return x
        """,
    "an attribute of `self` of a class with an imported base": """\
        import jax
        import haiku as hk
        class Scaled(hk.Module):
            def __call__(self, x):
                self.out = x * 2
                return self.out
        scaled = Scaled()
        g = jax.jit(lambda x: scaled(x))
        """,
    "a mutator's value used, or a dict method on what is not known to be a dict": """\
        import jax
        STATE = make_state()
        @jax.jit
        def f(x):
            STATE.update(x)
            return x
        """,
    "an error's message formatted from a tracer": """\
        import jax
        @jax.jit
        def f(x):
            if x.ndim != 1:
                msg = "expected a vector, got {}"
                raise TypeError(msg.format(x))
            assert x.shape, "empty: {}".format(x)
            return x
        """,
    "`format` of an object that is no string: a class' instance, an attribute (jax debugging)": """\
        import jax, string
        class Checker(string.Formatter):
            def format_field(self, value, spec):
                return ""
        checker = Checker()
        @jax.jit
        def f(x, config):
            checker.format("{}", x)
            config.template.format(x)
            return x
        """,
    "indexing arrays, and dicts with constant keys, in traced code": """\
        import jax, jax.numpy as jnp
        TABLE = jnp.asarray([1.0, 2.0])
        CONFIG = {"scale": 2.0}
        @jax.jit
        def f(x, i, xs):
            return {"y": TABLE[i] * x[i] * xs[i] * CONFIG["scale"]}, xs.get(i)
        """,
    "a static argument given a tracer by a function that traced code only calls (jax ode.py)": """\
        import jax
        from functools import partial
        @partial(jax.jit, static_argnums=0)
        def run(f, x):
            return f(x)
        def solve(x):
            return run(jax.numpy.sin(x), x)
        @jax.jit
        def outer(x):
            return solve(x)
        """,
    "a name bound to `x.at[i].set(v)`, indexed in a loop body (optax alias_test)": """\
        import jax, jax.numpy as jnp
        def precondition(xs, m):
            alphas = jnp.zeros(m)
            alphas = alphas.at[0].set(1.0)
            def left(i, u):
                return u * alphas[i]
            return jax.lax.fori_loop(0, m, left, xs)
        """,
    "sets of a dict's keys and of loop variables' fields (numpyro)": """\
        import jax
        @jax.jit
        def f(x, sites):
            assert set(x.keys()) == {"a"}
            dims = set(s.dim for s in sites)
            for s in sites:
                names = frozenset({s.name})
            return x
        """,
    "a dict attribute of an object that is not the method's `self` (jax core.py)": """\
        import jax
        class Context:
            def __init__(self):
                self.shared = {}
        @jax.jit
        def f(x, context):
            return context.shared.get(x)
        """,
    "a print in a function only `jax.eval_shape` traces (equinox checkpointed)": """\
        import jax
        def shapes(x):
            print("tracing", x)
            return "{}".format(x), x * 2
        out = jax.eval_shape(shapes, 1.0)
        """,
    "a leaf of a filter spec converted in a lambda that `tree_map` applies (equinox)": """\
        import jax
        def select(tree, spec):
            return jax.tree_util.tree_map(lambda mask, x: x if bool(mask) else None, spec, tree)
        @jax.jit
        def f(tree, spec):
            return select(tree, spec)
        """,
}


@pytest.mark.parametrize("source", KEPT.values(), ids=KEPT.keys())
def test_statements_that_can_hold_a_finding_are_kept(source: str) -> None:
    assert kept(source)


@pytest.mark.parametrize("source", DROPPED.values(), ids=DROPPED.keys())
def test_host_code_is_ruled_out(source: str) -> None:
    assert kept(source) == []


def test_only_the_statements_with_a_candidate_are_seeds() -> None:
    assert kept("""\
        import jax, pickle
        def host(x):
            pickle.dumps(x)
        @jax.jit
        def traced(x):
            pickle.dumps(x)
        """) == ["def traced(x):"]


def test_rules_that_report_outside_traced_code_see_every_anchor() -> None:
    found = collected("import pickle\ndef save(x):\n    pickle.dumps(x)\n")
    assert found.statements(ANCHORS, traced_only=False) == {1}


def test_stores_count_only_for_the_stores_anchor() -> None:
    found = collected("import jax\nd = {}\n@jax.jit\ndef f(x):\n    s.a = x\n    d[0] = x\n")
    assert found.statements(frozenset({"tobytes"}), traced_only=True) == set()
    assert found.statements(frozenset({STORES}), traced_only=True) == {2}
    host = collected("import jax\ndef f(x):\n    s.a = x\n")
    assert host.statements(frozenset({STORES}), traced_only=True) == set()


def test_hashing_sites_reached_from_other_modules_read_a_parameter() -> None:
    """Another module's traced call makes parameters traced: `lookup(k)` can hash a tracer,
    `fixed()` cannot."""
    found = collected(
        "TABLE = {}\ndef lookup(k):\n    return TABLE[k]\ndef fixed():\n    return TABLE[K]\n"
    )
    assert found.statements(frozenset({HASHED_KEYS}), traced_only=False) == {1}


def test_names_are_read_in_source_order_an_alias_after_its_import() -> None:
    """`dumps = pickle.dumps` in the `else:` of the `try:` that imports pickle is an alias of
    `pickle.dumps`: the file is read in the order it runs, the import first."""
    found = collected(
        "try:\n    import pickle\nexcept ImportError:\n    dumps = None\n"
        "else:\n    dumps = pickle.dumps\ndef save(x):\n    dumps(x)\n"
    )
    assert found.statements(ANCHORS, traced_only=False) == {1}


def test_statements_are_searched_within_the_ones_asked_about() -> None:
    """The functions other modules may call are the top-level ones: the run asks about their
    statements only, not about a class's methods."""
    source = (
        "import pickle\nTABLE = {}\nclass C:\n    def save(self, x):\n        pickle.dumps(x)\n"
        "    def look(self, k):\n        return TABLE[k]\n"
        "def save(x):\n    pickle.dumps(x)\ndef look(k):\n    return TABLE[k]\n"
    )
    found = collected(source)
    anchors = ANCHORS | {HASHED_KEYS}
    assert found.statements(anchors, traced_only=False) == {2, 3, 4}
    assert found.statements(anchors, traced_only=False, within={3, 4}) == {3, 4}
    assert found.statements(anchors, traced_only=False, within={3}) == {3}


def test_an_array_update_is_no_set_and_a_jnp_function_is_no_logger() -> None:
    """Method names that rules look for, on what the analysis knows is something else."""
    assert (
        kept("""\
        import jax, jax.numpy as jnp
        @jax.jit
        def f(x, i):
            y = x.at[i].set(x[0])
            return jnp.log(y)
        """)
        == []
    )
