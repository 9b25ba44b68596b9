"""The read-only walks of `jaxfix.fixes.traversal` make the calls LibCST's visits make, in order."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from pathlib import Path

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper

from jaxfix.fixes.traversal import children, visit_batched

ROOT = Path(__file__).resolve().parent.parent
NODE_TYPES = [t for t in vars(cst).values() if inspect.isclass(t) and issubclass(t, cst.CSTNode)]
# Every kind of statement and expression in its forms, beside three large modules of jaxfix.
KITCHEN_SINK = '''\
from __future__ import annotations
import a.b as c, d
from .e import (f, g as h)
from i import *

@dec(1, *args, k=2, **kw)
async def fn(p, /, q: int = 1, *r, s, t=2, **u) -> list[int]:
    global G
    async with x as (y, z), w:
        async for v in aiter():
            await v
    yield from gen()
    yield
    return [e async for e in it if e] or {k: v for k, v in d.items()} or {s for s in t}

class K(Base, metaclass=M):
    """Doc."""
    a: int = 1
    def m(self):
        f = lambda x, *y, z=1, **w: (x, *y)
        del self.a, self[0]
        self.b += 1
        assert self, f"{self!r:>{width}} {1 + 2}"
        raise E from None

try:
    pass
except* (A, B) as e:
    pass
else:
    pass
finally:
    pass
try:
    x = y = (z := 3)
except E:
    pass
while not a and b or c:
    if a is not b: break
    elif a in b: continue
    else: pass
for i, *j in zip(x[1:2, ::3], ~y, -z):
    print(i if j else -i, a @ b, a ** -b, a // b % c << d >> e | f ^ g & h, sep="")
match point:
    case Point(x=0, y=0) | [1, 2, *rest] | {"k": v, **kw} if v:
        pass
    case str() as s:
        pass
    case _:
        pass
with open(p) as f, open(q) as g:
    ...
x: tuple[int, ...] = (1, 2.0, 3j, b"b", "s" "t", None, True, ...)
'''
SOURCES = {
    "kitchen sink": KITCHEN_SINK,
    **{
        name: (ROOT / "jaxfix" / name).read_text(encoding="utf-8")
        for name in ("analysis/interpreter.py", "run/config.py", "run/batch.py")
    },
}


def _recorder(log: list[tuple[str, int]], tag: str) -> Callable[..., None]:
    def record(self: cst.BatchableCSTVisitor, node: cst.CSTNode) -> None:
        log.append((tag, id(node)))

    record.__name__ = tag  # LibCST finds visitor methods by their names
    return record


def recording_visitor(log: list[tuple[str, int]]) -> cst.BatchableCSTVisitor:
    """A visitor with a `visit_` and a `leave_` method for every node type, noting each call."""
    methods = {}
    for kind in NODE_TYPES:
        for prefix in ("visit", "leave"):
            name = f"{prefix}_{kind.__name__}"
            methods[name] = _recorder(log, name)
    return type("Recording", (cst.BatchableCSTVisitor,), methods)()


@pytest.mark.parametrize("source", SOURCES.values(), ids=SOURCES.keys())
def test_the_batched_walk_makes_libcsts_calls_in_order(source: str) -> None:
    module = cst.parse_module(source)
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    theirs: list[tuple[str, int]] = []
    ours: list[tuple[str, int]] = []
    wrapper.visit_batched([recording_visitor(theirs)])
    visit_batched(wrapper, [recording_visitor(ours)])
    assert theirs, "the recording visitor is called"
    assert ours == theirs


@pytest.mark.parametrize("source", SOURCES.values(), ids=SOURCES.keys())
def test_children_are_libcsts_in_order(source: str) -> None:
    todo: list[cst.CSTNode] = [cst.parse_module(source)]
    while todo:
        node = todo.pop()
        expected = node.children
        assert [id(c) for c in children(node)] == [id(c) for c in expected]
        todo.extend(expected)


def test_a_visitor_with_attribute_methods_gets_libcsts_own_visit() -> None:
    seen: list[str] = []

    class Bodies(cst.BatchableCSTVisitor):
        def visit_FunctionDef_body(self, node: cst.FunctionDef) -> None:
            seen.append(node.name.value)

    module = cst.parse_module("def f():\n    pass\n")
    visit_batched(MetadataWrapper(module, unsafe_skip_copy=True), [Bodies()])
    assert seen == ["f"]
