"""What a hash of a value in traced code would be asked of: a tracer, or a Python value.

JF106 reports a tracer used as a dict key, a set element, `hash`'s argument or a static
argument. Its verdicts rest on these facts, asked by the first pass (which statements LibCST
must see) and by the rule alike, so that the two cannot disagree.
"""

from __future__ import annotations

import ast

from jaxfix.analysis.keeping import Keeping
from jaxfix.analysis.reasons import Via
from jaxfix.analysis.tracing import Facts
from jaxfix.analysis.values import Kind

# Why tracing marks every parameter traced while some may hold Python values: a callable
# given to an unknown function along with traced data, a custom derivative rule (its
# `nondiff_argnums` arguments are passed as they are).
GUESSED = frozenset({Via.APPLIED, Via.CUSTOM_RULE})
# Functions a transform traces itself: their parameters are traced as declared.
ENTERED = frozenset({Via.DECORATED, Via.PASSED})
# Methods that turn an array into a Python value: they fail (or not) on their own, not a hash.
HOST_METHODS = frozenset({"item", "tolist", "tobytes", "__index__"})


class Keys:
    """The facts of one file's analysis that decide whether code hashes a tracer."""

    def __init__(self, facts: Facts, keeping: Keeping) -> None:
        self.facts = facts
        self.keeping = keeping

    def hashes_traced(self, fid: str) -> bool:
        """Whether the function `fid` is traced for a reason that makes its values tracers,
        not only guessed ones (see `GUESSED`)."""
        ways = self.facts.ways(fid)
        return bool(ways) and not ways <= GUESSED

    def entered(self, fid: str) -> bool:
        """Whether a transform traces `fid` itself (`jit`, `vmap`, a `scan` body): its
        parameters hold what the transform gives, not what a caller may pass."""
        return bool(self.facts.ways(fid) & ENTERED)

    def tracer_valued(self, node: ast.expr, fid: str) -> bool:
        """Whether `node` is a tracer (or a tuple holding one) where it stands: not a Python
        value made from one (`int(x)`, `x.item()` fail on their own, `str(x)` is a string)."""
        if isinstance(node, ast.Tuple):
            return any(self.tracer_valued(element, fid) for element in node.elts)
        if isinstance(node, ast.Attribute | ast.Subscript):
            return self.tracer_valued(node.value, fid) and self.facts.tracer_at(node)
        if isinstance(node, ast.BinOp):
            return self.tracer_valued(node.left, fid) or self.tracer_valued(node.right, fid)
        if isinstance(node, ast.UnaryOp):
            return self.tracer_valued(node.operand, fid)
        if isinstance(node, ast.Call):
            name = self.keeping.full_name(node.func, fid)
            if name is not None and name.startswith("builtins."):
                return False
            if isinstance(node.func, ast.Attribute) and node.func.attr in HOST_METHODS:
                return False
        return self.facts.tracer_at(node)

    def holds_tracers(self, node: ast.expr, fid: str) -> bool:
        """Whether iterating `node` (a name, or `self.name` that its class gives only values
        made in the method `fid`) certainly gives tracers: a list or tuple of them, as a
        caller gives it (`apply(..., [jnp.int32(0), jnp.int32(1)])`) or `tuple(...)` makes it
        of one. Never a dict, which iterating gives the keys of."""
        if isinstance(node, ast.Attribute):
            function = self.facts.module.nodes.get(fid)
            values = self.attribute_values(node, fid)
            return (
                function is not None
                and bool(values)
                and all(_inside(value, function) and self._gives_tracers(value) for value in values)
            )
        return isinstance(node, ast.Name) and self._gives_tracers(node)

    def _gives_tracers(self, node: ast.expr) -> bool:
        value = self.facts.module.value_of(node)
        if value is None or value.element is None or node in self.facts.module.guarded:
            return False
        return self.facts.kind_at(value.element, node) is Kind.TRACED

    def attribute_values(self, node: ast.Attribute, fid: str) -> list[ast.expr]:
        """What the methods of its class give `self.name` (`node`, in the method `fid`); none
        when `node` is not such an attribute, or when some code gives it no one value."""
        values = self.keeping.bound_values(node, fid)
        return [] if None in values else [v for v in values if v is not None]


def _inside(node: ast.expr, function: ast.AST) -> bool:
    """Whether `node` lies in the code of `function` (by its lines)."""
    first, last = getattr(function, "lineno", 0), getattr(function, "end_lineno", None) or 0
    return first <= node.lineno <= last
