"""The one analysis (`jaxfix.analysis`): which values reach a call certainly traced.

Each program marks the `pickle.dumps(...)` calls the analysis must report with `# traced` and
those it must leave alone with `# silent`: a look-alike beside each traced twin.
"""

from __future__ import annotations

import ast
import gc
import textwrap
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from jaxfix.analysis import walk
from jaxfix.analysis.file import analyse_file
from jaxfix.analysis.flow import analyse
from jaxfix.analysis.reasons import Reason, Via
from jaxfix.analysis.tracing import External, Facts, trace
from jaxfix.analysis.values import Staged
from jaxfix.models.parts import WholeModule
from jaxfix.proofs.cases import Case, load_cases

SINK = frozenset({"pickle.dumps"})
HEADER = """\
import functools
import pickle
import jax
import jax.numpy as jnp
import numpy as np
"""

PROGRAMS = {
    "rebinding changes a name's value from that statement on": """
@jax.jit
def f(x):
    y = x * 2
    pickle.dumps(y)  # traced
    y = 3
    pickle.dumps(y)  # silent
""",
    "branches join: traced on one side only is not certain": """
@jax.jit
def f(x, flag: bool = True):
    y = x if flag else 1
    pickle.dumps(y)  # silent
    if flag:
        z = x + 1
    else:
        z = x - 1
    pickle.dumps(z)  # traced
""",
    "a loop runs to a fixed point": """
@jax.jit
def f(x):
    acc = 0
    for _ in range(3):
        pickle.dumps(acc)  # silent
        acc = acc + x
    pickle.dumps(acc)  # silent
    total = x
    for _ in range(3):
        total = total + 1
    pickle.dumps(total)  # traced
""",
    "a loop whose state settles in the second round": """
@jax.jit
def f(x):
    a = x
    b = x
    for _ in range(3):
        a = b  # from the second round on, `b` is 0.0 here
        b = 0.0
    pickle.dumps(a)  # silent
    c = x
    d = x
    for _ in range(3):
        c = d
        d = d + 1.0
    pickle.dumps(c)  # traced
""",
    "a while loop's state settles too, and its else sees it": """
@jax.jit
def f(x, n: int = 3):
    a = x
    b = x
    while n:
        a = b
        b = 0.0
        n -= 1
    else:
        pickle.dumps(a)  # silent
    c = x
    while n:
        c = c * 2
        n -= 1
    else:
        pickle.dumps(c)  # traced
""",
    "a handler starts where the try body may have stopped": """
def risky():
    pass

@jax.jit
def f(x):
    y = x
    try:
        y = 0.0
        risky()
    except ValueError:
        pickle.dumps(y)  # silent
    z = x
    try:
        risky()
    except ValueError:
        pickle.dumps(z)  # traced
""",
    "a try's else runs after its whole body, its finally after either path": """
def risky():
    pass

@jax.jit
def f(x):
    y = x
    try:
        y = 0.0
    except ValueError:
        pass
    else:
        pickle.dumps(y)  # silent
    z = 0.0
    try:
        z = x
    except ValueError:
        z = x + 1
    else:
        pickle.dumps(z)  # traced
    finally:
        pickle.dumps(z)  # traced
    w = x
    try:
        risky()
    except ValueError:
        w = 0.0
    finally:
        pickle.dumps(w)  # silent
""",
    "break leaves the loop with its own state, skipping the else": """
@jax.jit
def f(x, items: tuple = (1, 2)):
    y = 0.0
    while True:
        y = x
        break
    pickle.dumps(y)  # traced
    z = 0.0
    for item in items:
        z = x
        break
    pickle.dumps(z)  # silent
    w = x
    for item in items:
        w = 0.0
        break
    else:
        pickle.dumps(w)  # traced
""",
    "continue goes back to the loop's head, leaving the rest of the round": """
@jax.jit
def f(x, items: tuple = (1, 2)):
    y = x
    for item in items:
        if item:
            continue
        y = 0.0
    pickle.dumps(y)  # silent
    z = x
    for item in items:
        z = z + 1
        continue
        z = 0.0
    pickle.dumps(z)  # traced
""",
    "a block under contextlib.suppress may stop anywhere": """
import contextlib

def risky():
    pass

@jax.jit
def f(x):
    y = 0.0
    with contextlib.suppress(ValueError):
        risky()
        y = x
    pickle.dumps(y)  # silent
    z = 0.0
    with open("log.txt") as handle:
        z = x
    pickle.dumps(z)  # traced
""",
    "a match whose last arm matches anything leaves no path around it": """
@jax.jit
def f(x, mode: str = "a"):
    y = 0.0
    match mode:
        case "a":
            y = x
        case _:
            y = x + 1
    pickle.dumps(y)  # traced
    z = 0.0
    match mode:
        case "a":
            z = x
        case other if other:
            z = x + 1
    pickle.dumps(z)  # silent
    w = 0.0
    match mode:
        case "a":
            w = x
        case (other as alias):
            w = x + 1
    pickle.dumps(w)  # traced
""",
    "a for loop binds each element of what it iterates": """
@jax.jit
def f(x):
    for row in x:
        pickle.dumps(row)  # traced
    for name in ("a", "b"):
        pickle.dumps(name)  # silent
""",
    "a handler may start before the try body's first store": """
def risky(value):
    return value

@jax.jit
def f(x):
    y = 0.0
    try:
        y = risky(x)
    except ValueError:
        pickle.dumps(y)  # silent
""",
    "after a try, the body's path and each handler's join": """
def risky():
    pass

@jax.jit
def f(x):
    y = 0.0
    try:
        risky()
    except ValueError:
        y = x
    pickle.dumps(y)  # silent
    z = 0.0
    try:
        z = x
    finally:
        pass
    pickle.dumps(z)  # traced
    w = x
    try:
        risky()
    except ValueError as w:
        pickle.dumps(w)  # silent
""",
    "annotated and augmented assignments bind as assignments do": """
@jax.jit
def f(x):
    y: float = x * 2
    pickle.dumps(y)  # traced
    z: float = 1.0
    pickle.dumps(z)  # silent
    a = 0.0
    a += x
    pickle.dumps(a)  # traced
    b = x
    b += 1.0
    pickle.dumps(b)  # traced
    c = 1.0
    c += 2.0
    pickle.dumps(c)  # silent
""",
    "del unbinds a name, a global one too": """
G = 1.0

@jax.jit
def f(x):
    y = x
    del y
    pickle.dumps(y)  # silent
    global G
    del G
    pickle.dumps(x)  # traced
""",
    "with ... as binds what the manager gives, never a tracer": """
import contextlib

@jax.jit
def f(x):
    y = x
    with open("log.txt") as y:
        pickle.dumps(y)  # silent
    with contextlib.nullcontext(x) as z:
        pickle.dumps(z)  # silent
""",
    "a with block nested in compile-time evaluation is evaluated at compile time too": """
@jax.jit
def f(x):
    with jax.ensure_compile_time_eval():
        with open("log.txt"):
            y = jnp.zeros(3)
        pickle.dumps(y)  # silent
    z = jnp.zeros(3)
    pickle.dumps(z)  # traced
""",
    "a function's returns join": """
def pick(flag, value):
    if flag:
        return value
    return 0.0

def same(flag, value):
    if flag:
        return value * 2
    return value

@jax.jit
def f(x, flag: bool = True):
    pickle.dumps(pick(flag, x))  # silent
    pickle.dumps(same(flag, x))  # traced
""",
    "a method sees its instance traced when the instance is": """
class Scaler:
    def scale(self, value):
        pickle.dumps(self)  # traced
        return value

@jax.jit
def f(s: Scaler, x):
    return s.scale(x)
""",
    "a classmethod's first parameter is the class, however it is called": """
class Scaler:
    @classmethod
    def build(cls, value):
        pickle.dumps(cls)  # silent
        pickle.dumps(value)  # traced
        return value

@jax.jit
def f(s: Scaler, x):
    s.build(x)
    Scaler.build(x)
    return x
""",
    "a match statement that may match no case keeps what came before it": """
match {"protocol": 5}:
    case {"protocol": protocol}:
        pass

@jax.jit
def f(x):
    pickle.dumps(x, protocol)  # traced
    match x:
        case 1:
            y = 0
        case _:
            y = x
    pickle.dumps(y)  # silent
""",
    "a case with class patterns narrows its subject and its as-name in that case only": """
class Leaf:
    pass

@jax.jit
def f(x, y, w):
    match x:
        case int():
            pickle.dumps(x)  # silent
        case Leaf() | str():
            pickle.dumps(x)  # silent
        case _:
            pickle.dumps(x)  # traced
    pickle.dumps(x)  # traced
    match y:
        case float() as n:
            pickle.dumps(n)  # silent
            pickle.dumps(y)  # silent
        case [a, b]:
            pickle.dumps(y)  # traced
    match w.attr:
        case float() as m:
            pickle.dumps(m)  # silent
            pickle.dumps(w)  # traced
    match y:
        case jax.Array():
            pickle.dumps(y)  # traced
""",
    "the returns of a function join in any order": """
def pick(flag, value):
    if flag:
        return 0.0
    return value

@jax.jit
def f(x, flag: bool = True):
    pickle.dumps(pick(flag, x))  # silent
""",
    "a tracer that returns early after another return leaves what follows checked": """
def early(flag, value, other):
    if flag:
        return value
    if isinstance(value, jax.core.Tracer):
        return value
    pickle.dumps(other)  # traced
    return value

@jax.jit
def f(x, y, flag: bool = True):
    early(flag, x, y)
""",
    "a call that certainly raises on a tracer ends the caller there, unless it yields": """
def concrete(value):
    if isinstance(value, jax.core.Tracer):
        raise TypeError("must be concrete")
    return float(value)

def concrete_values(value):
    if isinstance(value, jax.core.Tracer):
        raise TypeError("must be concrete")
    yield value

def validate_lazily(matrix, scale):
    concrete_values(scale)
    pickle.dumps(matrix)  # traced

def validate(matrix, scale):
    concrete(scale)
    pickle.dumps(matrix)  # silent

@jax.jit
def run(x, s):
    validate_lazily(x, s)
    validate(x, s)
""",
    "unpacking binds each element, a starred target a list of unknown ones": """
@jax.jit
def f(x):
    a, b = x, 1
    pickle.dumps(a)  # traced
    pickle.dumps(b)  # silent
    r0, r1 = x
    pickle.dumps(r0)  # traced
    rest = x
    c, *rest = x
    pickle.dumps(rest)  # silent
    pickle.dumps(c)  # traced
    d = x
    *d, e = (1, x)
    pickle.dumps(d)  # silent
    pickle.dumps(e)  # silent
    g, *h = (x, 2)
    pickle.dumps(g)  # silent
""",
    "the methods of a linen module get traced inputs, but for Python values and classmethods": """
from flax import linen as nn

class M(nn.Module):
    features: int = 3

    def __call__(self, x, *args, train: bool = False, **kw):
        pickle.dumps(x)  # traced
        pickle.dumps(train)  # silent
        pickle.dumps(args)  # silent
        pickle.dumps(kw)  # silent
        pickle.dumps(self.features)  # silent

    @classmethod
    def create(cls, x):
        pickle.dumps(x)  # silent
""",
    "an assert's message is evaluated, and a round that only continues reaches the head": """
@jax.jit
def f(x, items: tuple = (1, 2)):
    assert x.ndim == 1, pickle.dumps(x)  # traced
    z = x
    for _ in items:
        z = 0.0
        continue
    pickle.dumps(z)  # silent
    w = x
    for _ in items:
        w = w + 1
        continue
    pickle.dumps(w)  # traced
""",
    "after a match, a case's as-name holds the subject, not what the name held before": """
@jax.jit
def f(x, y):
    n = x
    match y:
        case float() as n:
            pass
    pickle.dumps(n)  # silent
    k = x
    match y:
        case float() as k:
            k = x + 1
    pickle.dumps(k)  # traced
""",
    "a function raises certainly only where each way out that is no raise is not reached": """
def maybe(flag, value):
    if flag:
        return 0.0
    if isinstance(value, jax.core.Tracer):
        raise TypeError("must be concrete")
    return value

async def concrete_async(value):
    if isinstance(value, jax.core.Tracer):
        raise TypeError("must be concrete")
    return value

def concrete(value):
    if isinstance(value, jax.core.Tracer):
        raise TypeError("must be concrete")
    return float(value)

checked = lambda value: concrete(value)

def validate_maybe(matrix, scale, flag):
    maybe(flag, scale)
    pickle.dumps(matrix)  # traced

def validate_async(matrix, scale):
    concrete_async(scale)
    pickle.dumps(matrix)  # traced

def validate_lambda(matrix, scale):
    checked(scale)
    pickle.dumps(matrix)  # silent

@jax.jit
def run(x, s, flag: bool = True):
    validate_maybe(x, s, flag)
    validate_async(x, s)
    validate_lambda(x, s)
""",
    "a block under contextlib.suppress is run, and its bindings join what came before": """
import contextlib

@jax.jit
def f(x):
    v = x
    with contextlib.suppress(ValueError):
        pickle.dumps(x)  # traced
        v = 0.0
    pickle.dumps(v)  # silent
""",
    "an import in a function rebinds the first name of its path": """
@jax.jit
def f(x):
    numpy = x
    import numpy.lib.stride_tricks
    pickle.dumps(numpy)  # silent
""",
    "a classmethod's first parameter is the class: calling it constructs, no __call__": """
class Scaler:
    def __call__(self, v):
        pickle.dumps(v)  # silent
        return v

    @classmethod
    def build(cls, x):
        return cls(x)

    def count():
        return 1

class Applied:
    def __call__(self, v):
        pickle.dumps(v)  # traced
        return v

    def apply(self, x):
        return self(x)

@jax.jit
def f(s: Scaler, a: Applied, x):
    s.build(x)
    a.apply(x)
    Scaler.count()
""",
    "an instance or a list of instances every call passes: its methods, its metadata": """
import flax.struct

@flax.struct.dataclass
class MLP:
    w: jax.Array

    def apply(self, v):
        pickle.dumps(v)  # traced
        return v * self.w

@flax.struct.dataclass
class Layer:
    w: jax.Array

    def apply(self, v):
        pickle.dumps(v)  # traced
        return v * self.w

@flax.struct.dataclass
class Meta:
    n: int = flax.struct.field(pytree_node=False)

def given_both(v):
    pickle.dumps(v)  # silent

def run(model, meta, x):
    pickle.dumps(meta)  # silent
    pickle.dumps(model)  # traced
    given_both(meta)
    given_both(x)
    return model.apply(x)

def run_all(layers, metas, x):
    for meta in metas:
        pickle.dumps(meta)  # silent
    pickle.dumps(metas)  # silent
    pickle.dumps(layers)  # traced
    for layer in layers:
        x = layer.apply(x)
    return x

jax.jit(run)(MLP(w=jnp.ones(3)), Meta(n=1), jnp.ones(3))
jax.jit(run_all)([Layer(w=jnp.ones(3))], [Meta(n=1), Meta(n=2)], jnp.ones(3))
""",
    "a call that asks about tracers, alone in a test, leaves its branch alone": """
@jax.jit
def f(x):
    if not_jax_tracer(x):
        pickle.dumps(x)  # silent
    if is_concrete(x.mean()):
        pickle.dumps(x)  # silent
    pickle.dumps(x)  # traced
""",
    "an if k is None: branch is not reached where a partial binds k to a value": """
def body(x, k=None):
    if k is None:
        pickle.dumps(x)  # silent
    pickle.dumps(x)  # traced

jax.jit(functools.partial(body, k=2))
""",
    "a starred target alone (it parses, but does not compile) binds what is unknown": """
@jax.jit
def f(x):
    rest = x
    *rest = x
    pickle.dumps(rest)  # silent
    pickle.dumps(x)  # traced
""",
    "a class and a local import are Python values: a helper given one too is polymorphic": """
class Cfg:
    pass

def helper(v):
    pickle.dumps(v)  # silent

def other(v):
    pickle.dumps(v)  # silent

def only_traced(v):
    pickle.dumps(v)  # traced

@jax.jit
def f(x):
    helper(x)
    helper(Cfg)
    import numpy
    other(x)
    other(numpy)
    only_traced(x)
""",
    "a class in a function, and one whose body raises, still define their methods": """
class Broken:
    raise RuntimeError("not importable")

    def method(self, v):
        pickle.dumps(v)  # traced

@jax.jit
def f(x, b: Broken):
    class Local:
        def method(self, v):
            pickle.dumps(v)  # traced
    Local().method(x)
    b.method(x)
""",
    "a tracer guard on a Python value that returns leaves what follows reached": """
@jax.jit
def f(x):
    k = 3
    if isinstance(k, jax.core.Tracer):
        return x
    pickle.dumps(x)  # traced
    pickle.dumps(k)  # silent
""",
    "unpacking a static value gives static elements, as iterating it does": """
def helper(v):
    pickle.dumps(v)  # silent

def twin(v):
    pickle.dumps(v)  # traced

@jax.jit
def f(x):
    helper(x)
    h, w = x.shape
    helper(h)
    twin(x)
    a, b = x
    twin(a)
""",
    "a bool bound to a type test is a Python value": """
def helper(v):
    pickle.dumps(v)  # silent

def twin(v):
    pickle.dumps(v)  # traced

@jax.jit
def f(x, n):
    helper(x)
    is_int = isinstance(n, int)
    helper(is_int)
    twin(x)
""",
    "a nested function sees the enclosing function's names as they are where it is defined": """
@jax.jit
def f(x):
    y = x * 2
    z = 3
    def inner():
        pickle.dumps(y)  # traced
        pickle.dumps(z)  # silent
    inner()
""",
    "at module level a name the module binds only later is still the builtin": """
SIZES = (1, 2)
N = len(SIZES)

def helper(v):
    pickle.dumps(v)  # silent

def twin(v):
    pickle.dumps(v)  # traced

@jax.jit
def f(x):
    helper(x)
    helper(N)
    twin(x)

def len(v):
    return 0
""",
    "host functions are interpreted when they may apply a transform, not otherwise": """
def train_step(x):
    pickle.dumps(x)  # traced

def method_target(x):
    pickle.dumps(x)  # traced

def never_traced(x):
    pickle.dumps(x)  # silent

class Trainer:
    def step(self, x):
        pickle.dumps(x)  # traced

    def run(self, x):
        fast = my_jit(self.step)
        return fast(x)

my_jit = jax.jit

def main(xs):
    step = jax.jit(train_step)
    for x in xs:
        step(x)
        never_traced(x)

def other():
    def inner(x):
        return method_target(x)
    return jax.vmap(inner)
""",
    "a function handed to the module's wrapper, bound first or through a local name": """
def compiled(fn):
    return jax.jit(fn)

def loss(cfg, x):
    pickle.dumps(x)  # traced

def mapped(x):
    pickle.dumps(x)  # traced

def build(cfg):
    step = functools.partial(loss, cfg)
    return compiled(step)

def build_mapped():
    transform = jax.vmap
    return transform(mapped)
""",
    "a parameter traced code also gives Python values is not certainly traced": """
def canonicalize(dtype):
    pickle.dumps(dtype)  # silent
    return dtype

def helper(y):
    pickle.dumps(y)  # traced

@jax.jit
def f(x):
    canonicalize(x)
    canonicalize(np.float32)
    helper(x)
    helper(x + 1)
    return x
""",
    "a polymorphic parameter stays so when an unknown function applies its function": """
def scale(v):
    pickle.dumps(v)  # silent
    return v

@jax.jit
def f(x):
    scale(2.0)
    return some_library.tree_map(scale, x)
""",
    "what a function named like a dtype query returns is static, from any module": """
from jax._src import dtypes

_dtype = dtypes.dtype

@jax.jit
def f(x):
    d = _dtype(x)
    pickle.dumps(d)  # silent
    pickle.dumps(dtypes.canonicalize_dtype(d))  # silent
    pickle.dumps(dtypes.promote(x))  # traced
""",
    "shapes, dtypes, len and literals are static": """
@jax.jit
def f(x):
    pickle.dumps(x.shape)  # silent
    pickle.dumps((x.ndim, x.size, x.dtype))  # silent
    pickle.dumps(len(x))  # silent
    pickle.dumps(jnp.result_type(x))  # silent
    pickle.dumps(jnp.finfo(x.dtype).eps)  # silent
    pickle.dumps(x[0])  # traced
""",
    "NumPy computed only from static values is static": """
TABLE = np.arange(4)

@jax.jit
def f(x):
    pickle.dumps(np.ones(x.shape))  # silent
    pickle.dumps(TABLE * 2)  # silent
    pickle.dumps(jnp.sum(x))  # traced
""",
    "static_argnums and static_argnames, also through functools.partial": """
@functools.partial(jax.jit, static_argnums=(1,), static_argnames=("mode",))
def f(x, n, mode="a"):
    pickle.dumps(n)  # silent
    pickle.dumps(mode)  # silent
    pickle.dumps(x)  # traced
""",
    "static_argnums at a call site": """
def g(x, n):
    pickle.dumps(n)  # silent
    pickle.dumps(x)  # traced

step = jax.jit(g, static_argnums=1)
""",
    "static_argnums on a method skips self": """
class Model:
    @functools.partial(jax.jit, static_argnums=(0, 2))
    def apply(self, x, n):
        pickle.dumps(n)  # silent
        pickle.dumps(x)  # traced
""",
    "custom_jvp nondiff_argnums are static": """
@functools.partial(jax.custom_jvp, nondiff_argnums=(0,))
def f(n, x):
    pickle.dumps(n)  # silent
    return x
""",
    "pytree metadata fields stay static": """
import dataclasses
import flax.struct
import equinox as eqx

class State(flax.struct.PyTreeNode):
    step: int = flax.struct.field(pytree_node=False)
    params: object = None

class Layer(eqx.Module):
    size: int = eqx.field(static=True)

@dataclasses.dataclass
class Config:
    name: str = dataclasses.field(metadata=dict(static=True))

@jax.jit
def f(state, layer, config):
    pickle.dumps(state.step)  # silent
    pickle.dumps(layer.size)  # silent
    pickle.dumps(config.name)  # silent
    pickle.dumps(state.params)  # traced
""",
    "aux data of a registered pytree class is static": """
@jax.tree_util.register_pytree_node_class
class Box:
    def __init__(self, value, label):
        self.value, self.label = value, label

    def tree_flatten(self):
        return (self.value,), (self.label,)

@jax.jit
def f(box):
    pickle.dumps(box.label)  # silent
    pickle.dumps(box.value)  # traced
""",
    "register_dataclass meta_fields are static": """
jax.tree_util.register_dataclass(Point, data_fields=["xy"], meta_fields=["tag"])

@jax.jit
def f(p):
    pickle.dumps(p.tag)  # silent
    pickle.dumps(p.xy)  # traced
""",
    "inside ensure_compile_time_eval nothing is staged": """
@jax.jit
def f(x):
    with jax.ensure_compile_time_eval():
        table = jnp.arange(3)
        pickle.dumps(table)  # silent
    pickle.dumps(jnp.arange(3))  # traced
""",
    "a tracer guard and the early exit it protects": """
@jax.jit
def f(x, y):
    if isinstance(x, jax.core.Tracer):
        pickle.dumps(x)  # silent
        return x
    pickle.dumps(x)  # silent
    if not isinstance(y, jax.core.Tracer):
        pickle.dumps(y)  # silent
    pickle.dumps(y)  # traced
""",
    "a tracer test inside a longer condition leaves both branches alone": """
@jax.jit
def f(x, y):
    if not_jax_tracer(x) and not_jax_tracer(y):
        pickle.dumps(x)  # silent
    else:
        pickle.dumps(y)  # silent
    pickle.dumps(y)  # traced
""",
    "a try that catches the concretization errors": """
@jax.jit
def f(x):
    try:
        pickle.dumps(x)  # silent
    except jax.errors.ConcretizationTypeError:
        pass
    try:
        pickle.dumps(x)  # traced
    except KeyError:
        pass
""",
    "a helper's summary is applied at each call": """
def save(blob, tag):
    pickle.dumps(tag)  # silent
    return pickle.dumps(blob)  # traced

def host():
    save(1, "a")

@jax.jit
def f(x):
    save(x, "b")
""",
    "a helper's return carries its parameter's condition": """
def double(v):
    return v * 2

def shape_of(v):
    return v.shape

@jax.jit
def f(x):
    pickle.dumps(double(x))  # traced
    pickle.dumps(shape_of(x))  # silent
""",
    "closures of a scan body": """
def outer(w, xs):
    def body(c, x):
        pickle.dumps(w)  # silent
        pickle.dumps(c + x)  # traced
        return c, None
    return jax.lax.scan(body, 0.0, xs)
""",
    "methods through self": """
class Logger:
    def write(self, value):
        pickle.dumps(value)  # traced

class Model:
    def helper(self, v):
        return pickle.dumps(v)  # traced

    @jax.jit
    def __call__(self, x):
        self.helper(x)
        logger.write(x)

logger = Logger()
""",
    "grad traces only argnums": """
def loss(params, batch, scale):
    pickle.dumps(params)  # traced
    pickle.dumps(scale)  # silent
    return params

jax.grad(loss)
""",
    "vmap in_axes None leaves a parameter unbatched": """
def per_row(row, table):
    pickle.dumps(table)  # silent
    pickle.dumps(row)  # traced

jax.vmap(per_row, in_axes=(0, None))
""",
    "an untraced function is never reported": """
def host(x):
    pickle.dumps(jnp.sum(x))  # silent
""",
    "strings made from tracers are static": """
@jax.jit
def f(x):
    pickle.dumps(f"{x}")  # silent
    pickle.dumps(str(x))  # silent
""",
    "a with statement binds what its manager gives: an instance keeps its methods": """
class Recorder:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def record(self, v):
        pickle.dumps(v)  # traced

    def skip(self, v):
        pickle.dumps(v)  # silent

@jax.jit
def f(x):
    with Recorder() as rec:
        rec.record(x)
""",
    "a function defined in a block at module level reads the names the module ends with": """
import sys

if sys.platform == "linux":
    def log(v):
        pickle.dumps(v)  # silent

    @jax.jit
    def f(x):
        log(x)

def log(v):  # what `log` names when `f` runs
    pickle.dumps(v)  # traced
""",
    "an instance of a class whose every field is metadata adds no tracer to what holds it": """
import flax.struct

@flax.struct.dataclass
class Meta:
    n: int = flax.struct.field(pytree_node=False)

@functools.partial(jax.jit, static_argnames=["n"])
def f(meta: Meta, n, x):
    pickle.dumps({"meta": meta, "n": n})  # silent
    pickle.dumps({"meta": meta, "x": x})  # traced
""",
    "a list of instances of a metadata-only class gives instances, with their methods": """
import flax.struct

@flax.struct.dataclass
class Meta:
    n: int = flax.struct.field(pytree_node=False)

    def describe(self, v):
        pickle.dumps(v)  # traced

    def unused(self, v):
        pickle.dumps(v)  # silent

def run_all(metas, x):
    for meta in metas:
        meta.describe(x)
    return x

jax.jit(run_all)([Meta(n=1), Meta(n=2)], jnp.ones(3))
""",
    "an operation on a jax array made outside a staged function is a tracer": """
W = jnp.ones(3)

def make():
    b = jnp.zeros(3)

    @jax.jit
    def inner(x):
        pickle.dumps(b * 2)  # traced
        return x

    return inner

@jax.jit
def f(x):
    pickle.dumps(W)  # silent
    pickle.dumps(W + 1)  # traced
    pickle.dumps(-W)  # traced
    pickle.dumps(W > 0)  # traced
    with jax.ensure_compile_time_eval():
        pickle.dumps(W * 2)  # silent
    return x

@jax.grad
def g(x):
    pickle.dumps(W + 1)  # silent
    return x.sum()
""",
    "a `self` attribute its class makes only a jax array is one": """
class Steps:
    def __init__(self):
        self.count = jnp.int32(0)
        self.calls = 0
        self.mixed = jnp.zeros(2)

    def tick(self):
        pickle.dumps(self.count + 1)  # traced
        pickle.dumps(self.count)  # silent
        pickle.dumps(self.calls + 1)  # silent
        pickle.dumps(self.mixed + 1)  # silent
        self.count += 1
        self.calls += 1
        self.mixed = 0

steps = Steps()

@jax.jit
def f(x):
    steps.tick()
    return x
""",
}


def reported_lines(source: str) -> set[int]:
    facts = trace(analyse(ast.parse(source)))
    return {call.node.lineno for call in facts.calls_to(SINK)}


def marked_lines(source: str, mark: str) -> set[int]:
    return {n for n, line in enumerate(source.splitlines(), 1) if line.endswith(f"# {mark}")}


@pytest.mark.parametrize("program", PROGRAMS.values(), ids=list(PROGRAMS))
def test_reports_exactly_the_traced_calls(program: str) -> None:
    source = HEADER + textwrap.dedent(program)
    assert marked_lines(source, "traced") | marked_lines(source, "silent"), "nothing marked"
    assert reported_lines(source) == marked_lines(source, "traced")


def test_reasons_are_typed() -> None:
    source = HEADER + "@jax.jit\ndef f(x):\n    g(x)\n\ndef g(y):\n    pass\n"
    facts = trace(analyse(ast.parse(source)))
    reasons = {facts.module.functions[fid].name: why[0] for fid, why in facts.reasons.items()}
    assert reasons == {"f": Reason(Via.DECORATED, "jax.jit"), "g": Reason(Via.CALLED, "f")}
    assert str(reasons["g"]) == "called from traced `f`"
    assert str(reasons["f"]) == "decorated with `jax.jit`"


def test_stores_that_outlive_the_call() -> None:
    source = HEADER + textwrap.dedent(
        """
        HISTORY = []
        CACHE = {}

        @jax.jit
        def f(x, out, memo={}):
            local = {}
            local["a"] = x
            CACHE["k"] = x
            out.value = x
            memo["k"] = x
            CACHE["shape"] = x.shape

        class Model:
            @jax.jit
            def g(self, x):
                self.last = x

        @jax.jit
        def kernel_call(x):
            acc = {}
            def body(i, carry):
                acc["sum"] = carry
                return carry + x
            return jax.lax.fori_loop(0, 3, body, x)

        def host(x):
            seen = {}
            def body(i, carry):
                seen["last"] = carry
                return carry + x
            return jax.lax.fori_loop(0, 3, body, x)

        def kernel(out_ref, memo={}):
            def body(i, carry):
                out_ref[0] = carry
                memo["k"] = carry
                return carry
            return jax.lax.fori_loop(0, 3, body, 0.0)
        """
    )
    facts = trace(analyse(ast.parse(source)))
    stores = sorted((s.root, s.node.lineno) for s in facts.stores())
    # `out` and `out_ref` are the caller's objects: whether they outlive the trace is decided
    # there; `acc` is made by the traced function that holds the loop, `seen` by host code.
    assert stores == [("CACHE", 14), ("memo", 16), ("memo", 42), ("seen", 35), ("self", 22)]


def test_a_global_name_rebound_in_traced_code_is_a_store_that_outlives_the_call() -> None:
    source = HEADER + "LAST = None\n\n@jax.jit\ndef f(x):\n    global LAST\n    LAST = x\n"
    facts = trace(analyse(ast.parse(source)))
    assert [(s.root, s.node.lineno, s.outlives) for s in facts.stores()] == [("LAST", 11, True)]


def test_a_store_in_a_try_that_catches_concretization_errors_is_left_alone() -> None:
    source = HEADER + textwrap.dedent(
        """
        CACHE = {}

        @jax.jit
        def f(x, s):
            try:
                CACHE["guarded"] = x
                try:
                    CACHE["in a try catching something else"] = x
                except ValueError:
                    pass
                CACHE["after it"] = x
                if isinstance(s, jax.core.Tracer):
                    CACHE["on the tracer's side"] = x
                CACHE["after a tracer guard"] = x
                if s:
                    CACHE["in an if"] = x
                CACHE["after it"] = x
            except TypeError:
                pass
            CACHE["plain"] = x
        """
    )
    facts = trace(analyse(ast.parse(source)))
    assert [(s.root, s.node.lineno) for s in facts.stores()] == [("CACHE", 26)]


def test_every_binding_of_a_global_name_or_an_attribute_is_a_store_at_its_statement() -> None:
    source = HEADER + textwrap.dedent(
        """
        A = B = D = E = G = H = K = None

        class Out:
            pass

        OUT = Out()

        @jax.jit
        def f(x):
            global A, B, D, E, G, H, K
            A, b = x, 1
            c, D = x
            for B in x:
                pass
            OUT.attr: int = x
            E = x
            a, *G = x
            with open("log.txt") as H:
                pass
            *K = x
        """
    )
    facts = trace(analyse(ast.parse(source)))
    stores = {(s.root, s.node.lineno) for s in facts.stores()}
    assert stores == {("A", 17), ("D", 18), ("B", 19), ("OUT", 21), ("E", 22)}
    # What the others store is no tracer, but the rules still read each statement.
    unknown = {(s.root, s.node.lineno) for s in facts.outliving_stores()} - stores
    assert unknown == {("G", 23), ("H", 24), ("K", 26)}


def test_a_store_after_a_raise_on_a_tracer_is_reached_only_where_that_value_is_concrete() -> None:
    keep = textwrap.dedent(
        """
        CACHE = {}

        def keep(value, scale):
            if isinstance(scale, jax.core.Tracer):
                raise TypeError("scale must be concrete")
            CACHE["k"] = value
        """
    )
    traced_scale = HEADER + keep + "\n@jax.jit\ndef f(x, s):\n    keep(x, s)\n"
    assert list(trace(analyse(ast.parse(traced_scale))).stores()) == []
    python_scale = HEADER + keep + "\n@jax.jit\ndef f(x):\n    keep(x, 1.0)\n"
    stores = trace(analyse(ast.parse(python_scale))).stores()
    assert [(s.root, s.node.lineno) for s in stores] == [("CACHE", 12)]


def test_an_augmented_store_into_a_traced_default_stores_a_tracer() -> None:
    """`memo["n"] += 1`: what is stored is what was there (traced) combined with 1."""
    source = HEADER + '@jax.jit\ndef f(x, memo={}):\n    memo["n"] += 1\n    memo["m"] = 1\n'
    stores = trace(analyse(ast.parse(source))).stores()
    assert [(s.root, s.node.lineno) for s in stores] == [("memo", 8)]


def test_a_linen_modules_methods_are_traced_as_its_methods_without_staging() -> None:
    """`init` / `apply` are meant to be jitted, but may run un-jitted: the inputs are traced,
    the body is not staged."""
    source = HEADER + textwrap.dedent(
        """
        from flax import linen as nn

        class M(nn.Module):
            features: int = 3

            def __call__(self, x):
                return x * self.features
        """
    )
    facts = trace(analyse(ast.parse(source)))
    reasons = {facts.module.functions[fid].name: why for fid, why in facts.reasons.items()}
    assert reasons == {"__call__": [Reason(Via.MODULE_METHOD, "flax.linen.Module")]}
    assert str(reasons["__call__"][0]) == "a method of a `flax.linen.Module`"
    assert not any(isinstance(source, Staged) for source in facts.traced)


def test_classes_another_module_declares_with_metadata_fields() -> None:
    """`static_classes`: what the other modules of a run tell of their pytree classes. A
    parameter annotated with one (by any name the import gives it, also optional) holds its
    metadata fields static; an instance of a class whose every field is metadata
    (`METADATA_ONLY`, "*") holds no tracer at all."""
    source = HEADER + textwrap.dedent(
        """
        import typing
        import base
        from base import System, Box, Plain

        @jax.jit
        def f(s: System, t: base.System, u: System | None, v: None | System, w: Optional[System],
              o: typing.Optional[System], b: Box, c: Box | int, p: Plain, q: Optional[Plain], x):
            pickle.dumps(s.n)  # silent
            pickle.dumps(s.w)  # traced
            pickle.dumps(t.n)  # silent
            pickle.dumps(u.n)  # silent
            pickle.dumps(v.n)  # silent
            pickle.dumps(w.n)  # silent
            pickle.dumps(o.n)  # silent
            pickle.dumps(b.k)  # silent
            pickle.dumps(b)  # silent
            pickle.dumps(c.k)  # traced
            pickle.dumps(p.n)  # traced
            pickle.dumps(q.n)  # traced
            pickle.dumps(x)  # traced
        """
    )
    static_classes = (("base.System", ("n",)), ("base.Box", ("*", "k")))
    facts = trace(analyse(ast.parse(source), static_classes=static_classes))
    assert reported_lines_of(facts) == marked_lines(source, "traced")
    assert reported_lines(source) == marked_lines(source, "traced") | marked_lines(source, "silent")


def test_a_parameter_annotated_with_no_class_of_the_run_holds_what_its_caller_gives() -> None:
    """With `static_classes`, only an annotation naming one of them makes a parameter an
    instance of an imported class: `d: dict` still holds its caller's object, here a dict
    whose keys a flatten reorders (`Facts.reorders`)."""
    source = HEADER + textwrap.dedent(
        """
        from base import System

        def show(d: dict):
            jax.debug.print("{d}", d=d)

        @jax.jit
        def f(s: System, x):
            show({"b": x, "a": x})
        """
    )
    tree = ast.parse(source)
    facts = trace(analyse(tree, static_classes=(("base.System", ("n",)),)))
    shown = next(n.value for n in ast.walk(tree) if isinstance(n, ast.keyword) and n.arg == "d")
    value = facts.module.value_of(shown)
    assert value is not None and value.qualified is None and facts.reorders(value)


def test_a_part_of_a_module_reads_the_static_fields_the_whole_module_declares() -> None:
    """`whole`: the tree is a part of the module (`jaxfix.models.parts`); the attributes the
    whole module's pytree classes declare static are static in the part too."""
    source = HEADER + "@jax.jit\ndef f(cfg, x):\n    pickle.dumps(cfg.n)\n    pickle.dumps(cfg.w)\n"
    part = trace(analyse(ast.parse(source), whole=WholeModule(static_fields=("n",))))
    assert reported_lines_of(part) == {9}
    assert reported_lines(source) == {8, 9}


def test_a_relative_import_resolves_against_the_module_and_whether_it_is_a_package() -> None:
    """`from . import jit` in `jax.api`, or in the package `jax` itself, is `jax.jit`; in a
    top-level module `jax` (no package) it is a top-level `jit`, no transform."""
    source = "import pickle\nfrom . import jit\n\n@jit\ndef f(x):\n    pickle.dumps(x)\n"
    assert reported_lines_of(trace(analyse(ast.parse(source), "jax.api"))) == {6}
    assert reported_lines_of(trace(analyse(ast.parse(source), "jax", is_package=True))) == {6}
    assert reported_lines_of(trace(analyse(ast.parse(source), "jax"))) == set()


def test_lambdas_in_class_bodies_and_defaults_are_analysed() -> None:
    """Every function gets a summary, also a lambda in a class body or a default (real code:
    `jax/_src/core.py`), so that another module's entry into this one never meets a function
    the analysis has not seen."""
    source = HEADER + textwrap.dedent(
        """
        class Box:
            unpack = lambda self: pickle.dumps(self)

        def f(x, key=lambda v: pickle.dumps(v)):
            return key(x)
        """
    )
    module = analyse(ast.parse(source))
    assert all(module.summary_of(fid) is not None for fid in module.nodes)
    facts = trace(module, [External("f", positions=(0,), reason="called from traced `g`")])
    assert [str(r) for r in facts.reasons[next(i for i in module.nodes if i.startswith("f@"))]] == [
        "called from traced `g`"
    ]


LOOKALIKES_FROM_REAL_CODE = {
    "a jitted callee's static parameter is never traced through a call (jax ode.py)": """
def outer(x, rtol):
    return inner(x, rtol)

@functools.partial(jax.jit, static_argnums=(1,))
def inner(x, rtol):
    pickle.dumps(rtol)  # silent
    pickle.dumps(x)  # traced

jax.jit(outer)
""",
    "a bound method handed to an unknown higher-order call keeps self (numpyro autoguide)": """
class Guide:
    def sample(self, key):
        pickle.dumps(self.prefix)  # silent
        pickle.dumps(key)  # traced

    def __call__(self, key):
        return seed(self.sample, key)

@jax.jit
def run(guide: Guide, key):
    return seed(guide.sample, key)
""",
    "custom_vjp rules get nondiff_argnums arguments as they were passed (splash attention)": """
@functools.partial(jax.custom_vjp, nondiff_argnums=(1,))
def attend(q, sizes):
    return q

def attend_fwd(q, sizes):
    pickle.dumps(sizes)  # silent
    return q, None

def attend_bwd(sizes, res, g):
    pickle.dumps(sizes)  # silent
    pickle.dumps(g)  # traced
    return (g,)

attend.defvjp(attend_fwd, attend_bwd)

@jax.jit
def step(q):
    return jax.grad(lambda q: attend(q, (128, 128)).sum())(q)
""",
    "isinstance of a Python type and type(x) in ... narrow to a Python value (jax dtypes.py)": """
SCALARS = (int, float)

@jax.jit
def f(x, y, z):
    if isinstance(x, type):
        pickle.dumps(x)  # silent
    else:
        pickle.dumps(x)  # traced
    if type(y) in SCALARS:
        pickle.dumps(y)  # silent
    pickle.dumps(y)  # traced
    z = jax.core.concrete_or_error(None, z, "must be static")
    pickle.dumps(z)  # silent
""",
    "a value without an array's attributes is a Python value (jax2tf canonical_arg)": """
@jax.jit
def f(x, y, z):
    a = x if getattr(x, "dtype", None) else pickle.dumps(x)  # silent
    b = pickle.dumps(x) if getattr(x, "dtype", None) else x  # traced
    if not hasattr(y, "shape"):
        pickle.dumps(y)  # silent
        return
    pickle.dumps(y)  # traced
    if not isinstance(z, int):
        pickle.dumps(z)  # traced
    else:
        pickle.dumps(z)  # silent
""",
    "a bool bound to a type test narrows where it is tested (pallas mosaic_gpu pipeline)": """
@jax.jit
def f(n, m, limit):
    dynamic = not isinstance(n, int)
    if not dynamic and limit > 1:
        pickle.dumps(n)  # silent
    if dynamic or limit > 1:
        pickle.dumps(n)  # traced
    static_m = isinstance(m, int)
    m = m + 1
    if static_m:
        pickle.dumps(m)  # traced
""",
    "an unknown map-like call zips its sequences into the function's parameters (jax core)": """
NAMES = ["a", "b"]

@jax.jit
def f(xs):
    def write(name, value):
        pickle.dumps(name)  # silent
        pickle.dumps(value)  # traced
    def combine(a, b):
        pickle.dumps(a)  # traced
        pickle.dumps(b)  # traced
    some_library.foreach(write, NAMES, xs)
    return some_library.associative_scan(combine, xs)
""",
    "a function given by keyword to an unknown call is not applied to its data (jax2tf)": """
@jax.jit
def f(x):
    def kept(v):
        pickle.dumps(v)  # silent
    def mapped(v):
        pickle.dumps(v)  # traced
    primitive.bind(x, callable=kept)
    return some_library.tree_map(mapped, x)
""",
}


@pytest.mark.parametrize(
    "program", LOOKALIKES_FROM_REAL_CODE.values(), ids=list(LOOKALIKES_FROM_REAL_CODE)
)
def test_lookalikes_from_real_code_stay_silent(program: str) -> None:
    source = HEADER + textwrap.dedent(program)
    assert reported_lines(source) == marked_lines(source, "traced")


def test_another_modules_call_leaves_a_jitted_functions_static_parameters_static() -> None:
    """flash_attention's `mha_reference` (jitted, `causal` static) called from traced code of
    another module with a traced value there: `causal` is still no tracer inside."""
    source = HEADER + textwrap.dedent(
        """
        @functools.partial(jax.jit, static_argnames=["causal"])
        def reference(q, causal=False):
            pickle.dumps(causal)
            return q
        """
    )
    module = analyse(ast.parse(source))
    outside = External("reference", positions=(0, 1), reason="called from traced `g`")
    assert reported_lines_of(trace(module, [outside])) == set()


def reported_lines_of(facts: Facts) -> set[int]:
    return {call.node.lineno for call in facts.calls_to(SINK)}


def test_a_parameter_other_modules_also_give_python_values_is_not_certainly_traced() -> None:
    """jax's `dtypes.canonicalize_dtype(dtype)` is called with a traced value by one module
    and with `np.float32` by another: neither it nor what it hands `dtype` to is reported."""
    source = HEADER + textwrap.dedent(
        """
        def canonicalize(dtype, x):
            pickle.dumps(dtype)  # polymorphic
            helper(dtype)
            pickle.dumps(x)  # traced

        def helper(d):
            pickle.dumps(d)  # polymorphic through the call
        """
    )
    module = analyse(ast.parse(source))
    traced_only = External("canonicalize", positions=(0, 1), reason="called from traced `g`")
    assert reported_lines_of(trace(module, [traced_only])) == marked_lines(
        source, "traced"
    ) | marked_lines(source, "polymorphic") | marked_lines(source, "polymorphic through the call")
    both = External(
        "canonicalize", positions=(0, 1), static_positions=(0,), reason="called from traced `g`"
    )
    assert reported_lines_of(trace(analyse(ast.parse(source)), [both])) == marked_lines(
        source, "traced"
    )


def test_the_analysis_of_a_file_leaves_no_reference_cycle() -> None:
    """Reference counting frees a file's syntax tree and analysis as soon as they are dropped:
    a cycle would leave them all to the cycle collector, which rescans them until then."""
    text = "import jax\n@jax.jit\ndef f(x):\n    return g(x)\ndef g(y):\n    return y\n"
    text += "def never_traced(z):\n    return z\n"  # pending: interpreted only on demand
    gc.disable()
    gc.freeze()  # only what the analysis makes is collected
    try:
        tree = ast.parse(text)
        analysed = analyse_file(tree, text)
        assert analysed.facts.module.functions and analysed.facts.module.pending
        del tree, analysed
        analyse_file(ast.parse("import jax\n"), "import jax\n")  # what the last one kept goes
        assert gc.collect() == 0
    finally:
        gc.unfreeze()
        gc.enable()


def test_host_functions_that_only_hand_functions_to_other_callables_wait_for_a_caller() -> None:
    """A host function that hands the module's functions to another module's callable or a
    builtin (`jax.tree.map(scale, xs)`, `map(scale, xs)`) makes no entry by that: it is
    interpreted only when asked for. One that hands them to the module's own functions, to
    a local name or to `functools.partial` may make one, and is interpreted up front."""
    source = textwrap.dedent(
        """\
        import functools
        import jax

        def scale(x):
            return x * 2

        def host_map(xs):
            return jax.tree.map(scale, xs), list(map(scale, xs))

        def host_lambda(xs):
            return jax.tree.map(lambda x: x, xs)

        def wrap(fn):
            return fn

        def by_wrapper():
            return wrap(scale)

        def by_partial():
            return functools.partial(scale)

        def by_local(apply):
            run = apply
            return run(scale)
        """
    )
    module = analyse(ast.parse(source))
    pending = {fid.split("@")[0] for fid in module.pending}
    assert {"scale", "host_map", "host_lambda"} <= pending
    assert not {"by_wrapper", "by_partial", "by_local"} & pending


def test_a_module_that_names_no_transform_interprets_no_host_function_up_front() -> None:
    """A function handing another to `functools.partial` may make an entry where the module
    names a transform; where it names none (`jax._src`'s modules, traced only through other
    modules' calls), it cannot, and waits for a caller."""
    body = "def helper(x):\n    return x\ndef host():\n    return functools.partial(helper, 1)\n"
    plain = analyse(ast.parse("import functools\n" + body))
    transforming = analyse(ast.parse("import functools\nimport jax\nJIT = jax.jit\n" + body))
    assert {fid.split("@")[0] for fid in plain.pending} == {"helper", "host"}
    assert {fid.split("@")[0] for fid in transforming.pending} == {"helper"}


@pytest.mark.parametrize(
    ("source", "traced"),
    [
        ("import pickle\ndef save(x):\n    pickle.dumps(x)\n", False),
        ("from jax import numpy as jnp\ndef f(x):\n    return jnp.sin(x)\n", False),
        ("from jax import jit as compiled\n@compiled\ndef f(x):\n    return x\n", True),
        ("import jax\ndef f(x):\n    return x\ng = jax.vmap(f)\n", True),
        ("from jax import lax\ndef f(c, x):\n    return c, x\nlax.scan(f, 0, [1])\n", True),
        (
            "from flax import linen as nn\nclass M(nn.Module):\n    def __call__(self, x):\n"
            "        return x\n",
            True,
        ),
    ],
    ids=[
        "no jax",
        "jax.numpy only",
        "a transform imported by another name",
        "a module holding transforms",
        "a submodule holding one",
        "a module base that traces",
    ],
)
def test_a_module_that_names_no_transform_is_not_interpreted_for_traced_code(
    source: str, traced: bool
) -> None:
    """Only through a name that an import binds to a transform (or to what holds one) can a
    module have traced code of its own: one that reads none is not interpreted when only its
    traced code is asked about; its analysis is that of a module with none."""
    tree = ast.parse(source)
    analysed = analyse_file(tree, source, traced_only=True)
    assert bool(analysed.facts.reasons) is traced
    assert bool(analysed.facts.module.functions) is traced
    # Nor is what only the interpreters read drawn from its walk (`declarations.declared`).
    assert analysed.facts.module.whole_read is traced
    assert bool(analyse_file(tree, source).facts.module.functions)  # all code is asked about


def test_storing_an_instance_in_an_attribute_makes_no_instance_of_the_receiver() -> None:
    """`self.model = MLP()` binds no name: `helper(self)` gives `helper` a `Trainer`, not an
    `MLP` (whose methods its calls would then reach); `helper(model)` with `model = MLP()`
    gives it an `MLP`."""
    source = textwrap.dedent(
        """\
        class MLP:
            def apply(self, x):
                return x

        class Trainer:
            def setup(self):
                self.model = MLP()
                helper(self)
                model = MLP()
                other(model)

        def helper(obj):
            return obj

        def other(obj):
            return obj
        """
    )
    params = analyse(ast.parse(source)).instance_params
    assert {fid.split("@")[0]: by_name for fid, by_name in params.items()} == {
        "other": {"obj": "MLP"}
    }


def test_a_module_other_modules_trace_is_interpreted_whatever_it_names() -> None:
    source = "import pickle\ndef save(x):\n    pickle.dumps(x)\n"
    called = External("save", positions=(0,), reason="called from traced `g`")
    analysed = analyse_file(ast.parse(source), source, external=[called], traced_only=True)
    assert reported_lines_of(analysed.facts) == {3}


def _signature(source: str, tree: ast.Module, external: tuple[External, ...]) -> object:
    """What the rules read of an analysis: traced sources and functions, calls given a tracer
    and stores of one (by position)."""
    analysed = analyse_file(tree, source, external=external)
    facts = analysed.facts
    return (
        frozenset(facts.traced),
        {fid: tuple(reasons) for fid, reasons in facts.reasons.items()},
        sorted((c.node.lineno, c.node.col_offset) for c in analysed.traced_calls().values()),
        sorted((s.node.lineno, s.node.col_offset) for s in facts.stores()),
    )


def _entries(tree: ast.Module) -> tuple[External, ...]:
    """Every top-level function entered from another module with all its parameters traced."""
    return tuple(
        External(node.name, tuple(range(len(node.args.args))), staged=True)
        for node in tree.body
        if isinstance(node, ast.FunctionDef)
    )


@pytest.mark.parametrize("case", load_cases(), ids=lambda case: case.name)
def test_a_reused_analysis_gives_what_a_fresh_one_gives(case: Case) -> None:
    """A file other modules trace is analysed again on the same tree with more entries, its
    summaries reused: in either order, each result is the fresh analysis'."""
    source = case.before.read_text(encoding="utf-8")
    runs = [(), _entries(ast.parse(source))]
    fresh = [_signature(source, ast.parse(source), entries) for entries in runs]
    for order in ([0, 1], [1, 0]):
        tree = ast.parse(source)
        for index in order:
            assert _signature(source, tree, runs[index]) == fresh[index]


def test_the_last_analysis_of_a_tree_answers_the_same_question_again() -> None:
    """Reused only for the same tree and the same question (module, package, transforms...);
    run on a thread of its own, which has analysed nothing yet."""
    source = HEADER + "@jax.jit\ndef f(x):\n    pickle.dumps(x)\n"

    def ask() -> None:
        tree = ast.parse(source)
        first = analyse(tree)
        assert analyse(tree, "", is_package=False) is first and first.reused
        assert analyse(ast.parse(source)) is not first  # another tree
        again = analyse(tree, "pkg.mod")
        assert again is not first and analyse(tree, "pkg.mod") is again
        assert analyse(tree, "pkg.mod", is_package=True) is not again
        assert analyse(tree, "pkg.mod", is_package=True, reuse=False) is not again
        plain = ast.parse("import pickle\n")  # no transform: nothing interpreted
        assert analyse(plain, traced_only=True) is analyse(plain, traced_only=True)

    with ThreadPoolExecutor(max_workers=1) as pool:
        pool.submit(ask).result()


def test_mutually_recursive_functions_have_the_same_summaries_whichever_is_asked_first() -> None:
    source = HEADER + textwrap.dedent("""\
        def f(x):
            if x.ndim:
                return g(x)
            return jnp.sin(x)
        def g(x):
            return f(x) + x
        """)
    tree = ast.parse(source)
    returns = []
    for first, second in (("f", "g"), ("g", "f")):
        module = analyse(tree, reuse=False)
        ids = {module.nodes[fid].name: fid for fid in module.nodes}
        module.summary_of(ids[first])
        module.summary_of(ids[second])
        returns.append({name: module.functions[fid].returns for name, fid in ids.items()})
    assert returns[0] == returns[1]
    assert not module.order_dependent


LEAVES = (ast.Constant, ast.expr_context)


def test_summaries_that_depend_on_the_order_they_were_asked_for_are_not_reused() -> None:
    """`f` and `g` call each other through an alias (`other = g`), which the cycle check by
    names does not see: whichever is asked for first sees the other unfinished. An analysis
    whose tracing met that is analysed afresh for another question, never reused."""
    source = HEADER + textwrap.dedent("""\
        def f(x):
            return other(x) + x
        def g(x):
            y = f(x)
            pickle.dumps(y)
            return y
        other = g
        """)
    into_f = External("f", positions=(0,), reason="called from traced `k`")
    into_g = External("g", positions=(0,), reason="called from traced `k`")
    for first, then in ((into_f, into_g), (into_g, into_f)):
        tree = ast.parse(source)
        trace(analyse(tree), [first])
        again = trace(analyse(tree), [then])  # before another tree is analysed
        fresh = trace(analyse(ast.parse(source)), [then])
        assert reported_lines_of(again) == reported_lines_of(fresh)


def test_an_analysis_is_reused_after_its_tracing_asked_for_a_function_again() -> None:
    """A function is running only while it is interpreted: a second call of a finished one
    makes no summary depend on the order they were asked for."""
    source = HEADER + "def g(v):\n    return v\n@jax.jit\ndef f(x):\n    return g(x) + g(x)\n"
    tree = ast.parse(source)
    first = analyse(tree)
    trace(first)
    assert not first.order_dependent and analyse(tree) is first


def test_each_function_is_declared_in_a_summary_the_module_bodys_included() -> None:
    """`declared_in` names the function whose body defines each one, or `<module>`: every
    one names a summary of the analysis, the module body's (`analyse`) among them."""
    source = HEADER + textwrap.dedent("""\
        def g(v):
            def h(w):
                return w
            return h(v)
        """)
    module = analyse(ast.parse(source), reuse=False)
    for fid in list(module.nodes):
        module.summary_of(fid)
    assert module.functions["<module>"].node is module.tree
    assert set(module.declared_in.values()) <= set(module.functions)


@pytest.mark.parametrize("package", ["jaxfix", "codemods", "tests/fixtures"])
def test_the_walks_children_are_cpythons_without_the_leaves(package: str) -> None:
    """`walk.children` reads only the fields the grammar lets hold a node: it yields what
    `ast.iter_child_nodes` yields, in order, less constants and expression contexts; and
    `walk.push_children` pushes the same, last first."""
    root = Path(__file__).resolve().parent.parent / package
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            expected = [c for c in ast.iter_child_nodes(node) if not isinstance(c, LEAVES)]
            assert list(walk.children(node)) == expected, (path, ast.dump(node)[:200])
            pushed: list[ast.AST] = []
            walk.push_children(node, pushed.append)
            assert pushed == expected[::-1], (path, ast.dump(node)[:200])


def test_a_node_class_without_a_signature_keeps_every_field_but_its_context() -> None:
    class Unsigned(ast.expr):
        """A node of no grammar."""

        _fields = ("value", "name", "ctx")

    assert walk.node_fields(Unsigned) == ("value", "name")
    assert walk.node_fields(ast.Name) == ()
    assert walk.node_fields(ast.FunctionDef)[:2] == ("args", "body")
    inner, names = ast.Name("x", ast.Load()), [ast.Name("y", ast.Load()), ast.Constant(1)]
    pushed: list[ast.AST] = []
    walk.push_children(Unsigned(value=inner, name=names), pushed.append)
    assert pushed == [names[0], inner]  # either field may hold a list: constants left out
