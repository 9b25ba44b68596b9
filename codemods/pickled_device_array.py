"""JF108 pickled-device-array (opt-in): host code pickles a `jax.Array` instead of its host copy."""

from __future__ import annotations

import libcst as cst

from jaxfix.fixes.hoist import jax_module_name
from jaxfix.fixes.syntax import source_of
from jaxfix.models.diagnostic import FixSafety
from jaxfix.rules.rule import Rule, command_hooks

# Serializer -> the keyword of the value it serializes (always its first argument).
PICKLERS = {
    "pickle.dumps": "obj",
    "pickle.dump": "obj",
    "cloudpickle.dumps": "obj",
    "cloudpickle.dump": "obj",
    "dill.dumps": "obj",
    "dill.dump": "obj",
    "joblib.dump": "value",
}
# Calls whose result is a `jax.Array` on a device.
ARRAY_NAMESPACES = ("jax.numpy.", "jax.random.")
ARRAY_MAKERS = frozenset({"jax.device_put", "jax.device_put_replicated", "jax.device_put_sharded"})
# ... unless they are these, which answer Python or NumPy values.
NOT_ARRAYS = frozenset({"jax.numpy.shape", "jax.numpy.ndim", "jax.numpy.size", "jax.numpy.dtype"})
HOST_COPIES = frozenset({"jax.device_get", "numpy.asarray", "numpy.array"})
# The nodes whose `body` is a sequence of statements run in order.
_BLOCKS = (cst.Module, cst.IndentedBlock, cst.SimpleStatementLine, cst.SimpleStatementSuite)


class PickledDeviceArray(Rule):
    """
    ## What it does
    Finds host code (at module level or in a function that is not traced) that pickles a value
    jaxfix knows is a `jax.Array` or a tuple, list or dict of them: the result of a function the
    module jits, of `jnp.*` or `jax.random.*`, or of `jax.device_put`. A name holds the value of
    the last assignment before the pickling (`weights = fit(weights)` in a host function); a
    name rebound in a branch or a loop, or a parameter, is not known and not reported.
    Opt-in: select `JF108` to run it.

    ## Why is this bad?
    A pickled `jax.Array` unpickles as a `jax.Array`: the reader needs jax installed (the load
    fails with `ModuleNotFoundError: No module named 'jax'` elsewhere), and the array is put
    back on a device, which on another machine may not be the one it came from. A NumPy copy
    loads anywhere.

    ## Example
    ```python
    @jax.jit
    def fit(x):
        return x / x.sum()


    weights = fit(jnp.arange(4.0))
    blob = pickle.dumps(weights)
    ```

    ## Use instead
    ```python
    blob = pickle.dumps(jax.device_get(weights))
    ```

    ## Fix safety
    Safe for readers that use the loaded value as a NumPy array (or pass it back to jax, which
    accepts NumPy arrays). A reader that relies on getting a `jax.Array` back (its `.sharding`,
    `.devices()`, or `isinstance(x, jax.Array)`) now gets a `numpy.ndarray`: that is why the rule
    is opt-in.

    ## References
    - https://docs.jax.dev/en/latest/_autosummary/jax.device_get.html
    - https://docs.python.org/3/library/pickle.html
    """

    code = "JF108"
    name = "pickled-device-array"
    summary = "Host code pickles a jax.Array (the file then needs jax to load)"
    message = (
        "`{call}` pickles `{value}`, a `jax.Array`: loading it needs jax and a device;"
        " pickle `jax.device_get(...)` of it instead"
    )
    fix_title = "Pickle the host copy (`jax.device_get`)"
    fix_safety = FixSafety.SAFE
    anchors = frozenset(PICKLERS)
    traced_only = False
    default_enabled = False

    def visit_Call(self, node: cst.Call) -> None:
        if self.traced.context_of(node) is not None:
            return  # in traced code: JF101's
        payload = self._payload(node)
        if payload is None or not self._is_device_array(payload):
            return
        message = self.message.format(
            call=source_of(node.func),
            value=source_of(payload),
        )
        jax_name, imports = jax_module_name(self.traced, node)
        if not jax_name:
            self.report(node, message)
            return
        host = cst.parse_expression(f"{jax_name}.device_get(x)")
        assert isinstance(host, cst.Call)
        fix = self.make_fix({payload: host.with_changes(args=[cst.Arg(payload)])}, imports)
        self.report(node, message, fix)

    def _payload(self, call: cst.Call) -> cst.BaseExpression | None:
        for name in self.qualified_names(call.func):
            keyword = PICKLERS.get(name)
            for index, arg in enumerate(call.args if keyword else ()):
                if (arg.keyword is None and not arg.star and index == 0) or (
                    arg.keyword is not None and arg.keyword.value == keyword
                ):
                    return arg.value
        return None

    def _is_device_array(self, value: cst.BaseExpression, depth: int = 0) -> bool:
        """Whether `value` surely is a `jax.Array` (or a display of them); unknown is no."""
        if depth > 8:
            return False
        if isinstance(value, cst.Tuple | cst.List):
            elements = [e.value for e in value.elements]
            return bool(elements) and all(self._is_device_array(e, depth + 1) for e in elements)
        if isinstance(value, cst.Dict):
            items = [e.value for e in value.elements if isinstance(e, cst.DictElement)]
            return (
                bool(items)
                and len(items) == len(value.elements)
                and all(self._is_device_array(v, depth + 1) for v in items)
            )
        if isinstance(value, cst.Call):
            return self._makes_device_array(value)
        if isinstance(value, cst.Name):
            bound = self._single_value(value)
            return bound is not None and self._is_device_array(bound, depth + 1)
        return False

    def _makes_device_array(self, call: cst.Call) -> bool:
        names = self.qualified_names(call.func)
        if names & (HOST_COPIES | NOT_ARRAYS):
            return False
        if names & ARRAY_MAKERS or any(n.startswith(ARRAY_NAMESPACES) for n in names):
            return True
        function = (
            self.traced.function_of_name(call.func) if isinstance(call.func, cst.Name) else None
        )
        traced = self.traced.functions.get(function) if function is not None else None
        return traced is not None and traced.staged and self.traced.context_of(call) is None

    def _single_value(self, name: cst.Name) -> cst.BaseExpression | None:
        """The value `name` holds where it is read: that of the `name = value` (or `name,
        other = value`) that reaches it. A name bound in its own scope (a host function's
        parameter rebound to a jitted call's result, `x = fit(x)`) takes the last such
        assignment before the read in straight-line code; any other binding on the way (in a
        branch, a loop, a `with` target, a parameter) makes it unknown. A name of an enclosing
        scope counts only when that scope binds it once."""
        assignments = self.traced.assignments(name)
        scope = self.traced.scope_of(name)
        if assignments and all(a.scope is scope for a in assignments):
            statements = [self._statement_of(a.node) for a in assignments]
            return self._reaching_value(name, [s for s in statements if s is not None])
        if len(assignments) != 1:
            return None
        return self._assigned_value(self._statement_of(assignments[0].node))

    def _statement_of(self, node: cst.CSTNode) -> cst.CSTNode | None:
        """The statement (small or compound) that holds `node`."""
        current: cst.CSTNode | None = node
        while current is not None and not isinstance(
            current, cst.BaseSmallStatement | cst.BaseCompoundStatement
        ):
            current = self.traced.parent(current)
        return current

    def _reaching_value(
        self, read: cst.Name, bindings: list[cst.CSTNode]
    ) -> cst.BaseExpression | None:
        """The value of the binding among `bindings` (statements of the read's scope) that
        reaches `read` on every path, walking back through the enclosing blocks."""
        current = self._statement_of(read)
        while current is not None:
            parent = self.traced.parent(current)
            if isinstance(parent, _BLOCKS):
                siblings = list(parent.body)
                for sibling in reversed(siblings[: siblings.index(current)]):
                    for statement in reversed(_small_statements(sibling)):
                        if any(statement is b for b in bindings):
                            return self._assigned_value(statement)
                        if any(self._holds(statement, b) for b in bindings):
                            return None  # bound in a branch or a loop before the read: unknown
            if isinstance(parent, cst.Module | cst.FunctionDef | cst.ClassDef | cst.Lambda):
                return None  # the scope's start: a parameter, or unbound here
            if isinstance(parent, cst.BaseCompoundStatement) and any(
                self._holds(parent, b) for b in bindings
            ):
                return None  # a loop's later binding, a `with ... as`, another branch's
            current = parent
        return None

    def _holds(self, outer: cst.CSTNode, node: cst.CSTNode) -> bool:
        """Whether `node` is `outer` or inside it."""
        current: cst.CSTNode | None = node
        while current is not None and current is not outer:
            current = self.traced.parent(current)
        return current is outer

    def _assigned_value(self, statement: cst.CSTNode | None) -> cst.BaseExpression | None:
        """The value of `name = value` or `a, b = value` with a single target."""
        if isinstance(statement, cst.Assign) and len(statement.targets) == 1:
            return statement.value
        return None


def _small_statements(statement: cst.CSTNode) -> list[cst.CSTNode]:
    """A line's statements (`a = f(x); b = g(a)`), else the statement itself."""
    if isinstance(statement, cst.SimpleStatementLine):
        return list(statement.body)
    return [statement]


# `PickledDeviceArrayCommand`: this rule as a LibCST codemod (`python -m libcst.tool codemod`).
__getattr__, __dir__ = command_hooks(PickledDeviceArray)
