"""The host-solver fix: a SciPy solver called in traced code (`res = minimize(objective,
x0=x0)`) runs whole in `jax.pure_callback`, on concrete values, and gives back the fields of its
result that the code reads (`res.x`, `res.fun`), each with the shape and dtype
`jax.ShapeDtypeStruct` says (`jaxfix.models.host_solvers`). The functions defined for the
solve alone (`def objective(c): ...`) move into the host function, so that they close over its
concrete values, not the tracers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import libcst as cst
from libcst.metadata import Assignment, FunctionScope

from jaxfix.fixes.eager_calls import references
from jaxfix.fixes.fix import ImportNeeded, Replacement
from jaxfix.fixes.hoist import (
    TIGHT,
    fresh_name,
    jax_module_name,
    jax_numpy_name,
    moves_with,
    numpy_name,
)
from jaxfix.fixes.syntax import calls_in, names_read
from jaxfix.fixes.tracing import Statement, TracedAnalysis, TracedFunction
from jaxfix.models.host_solvers import Like, Solver
from jaxfix.models.transforms import TRANSFORMS

# Transforms that differentiate what they trace: `jax.pure_callback` has no derivative.
_DIFFERENTIATING = frozenset(
    name for name, spec in TRANSFORMS.items() if spec.argnums_keyword is not None
) | {"jax.jvp", "jax.vjp", "jax.linearize"}
_BLANK = cst.EmptyLine(indent=False)
# Libraries whose functions need concrete values: a starting point they compute from a tracer
# cannot be computed in traced code.
_HOST_LIBRARIES = ("numpy.", "scipy.")


@dataclass(frozen=True)
class SolverCallback:
    """The fix's replacements (the solve's statement, the definitions moved with it, the
    reads of its result's fields) and the imports they need."""

    replacements: dict[cst.CSTNode, Replacement]
    imports: list[ImportNeeded]


@dataclass(frozen=True)
class _Result:
    """One value the host function gives back: its name in traced code, what it is like,
    and how the host function reads it off the solver's result."""

    name: str
    like: Like
    read: str


@dataclass
class _Plan:
    """What the rewrite moves and passes: the solve's statement and the definitions made for it
    alone, what comes back (with the reads it replaces), the starting point (computed in
    traced code first when it is traced, under the name `start_name`), the callback's
    operands and the host function's frozen defaults."""

    statement: cst.SimpleStatementLine
    defs: list[cst.FunctionDef]
    results: list[tuple[_Result, list[cst.CSTNode]]]
    start: cst.BaseExpression | None
    start_name: str
    operands: list[str]
    frozen: list[str]


def solver_callback(
    analysis: TracedAnalysis, call: cst.Call, solver: Solver, context: TracedFunction
) -> SolverCallback | str:
    """The rewrite of the statement holding `call` (a call of `solver`), or why there is none."""
    plan = _plan(analysis, call, solver, context)
    if isinstance(plan, str):
        return plan
    names = _names(analysis, call)
    if isinstance(names, str):
        return names
    jax_name, jnp_name, np_name, imports = names
    taken = [r.name for r, _ in plan.results] + [plan.start_name]
    host_name = fresh_name(analysis, f"{_short(solver)}_on_host", taken)
    taken.append(host_name)
    likes = {r.name: fresh_name(analysis, f"{r.name}_like", taken) for r, _ in plan.results}
    first_lines: list[cst.BaseStatement] = []
    start_code = cst.Module([]).code_for_node(plan.start) if plan.start is not None else ""
    moved: cst.CSTNode = plan.statement
    if plan.start_name:
        assert plan.start is not None
        first_lines.append(cst.parse_statement(f"{plan.start_name} = {start_code}\n"))
        moved = moved.deep_replace(plan.start, cst.Name(plan.start_name))
        start_code = plan.start_name
    statement = cst.ensure_type(moved, cst.SimpleStatementLine)
    first_lines += [
        cst.parse_statement(
            f"{likes[r.name]} = {jax_name}.ShapeDtypeStruct("
            f"{_shape_dtype(r.like, start_code, jnp_name)})\n"
        )
        for r, _ in plan.results
    ]
    returned = ", ".join(
        f"{np_name}.asarray({r.read}, {likes[r.name]}.dtype)" for r, _ in plan.results
    )
    defs = [d.with_changes(leading_lines=()) if i == 0 else d for i, d in enumerate(plan.defs)]
    host_def = cst.FunctionDef(
        name=cst.Name(host_name),
        params=cst.Parameters(
            params=[cst.Param(cst.Name(n)) for n in plan.operands]
            + [cst.Param(cst.Name(n), default=cst.Name(n), equal=TIGHT) for n in plan.frozen]
        ),
        body=cst.IndentedBlock(
            [
                *defs,
                statement.with_changes(leading_lines=[_BLANK] if defs else []),
                cst.parse_statement(f"return {returned}\n"),
            ]
        ),
        leading_lines=[_BLANK],
    )
    structs = ", ".join(likes[r.name] for r, _ in plan.results)
    structs = f"({structs})" if len(plan.results) > 1 else structs
    callback = cst.parse_statement(
        f"{', '.join(r.name for r, _ in plan.results)} = {jax_name}.pure_callback("
        f'{", ".join([host_name, structs, *plan.operands])}, vmap_method="sequential")\n'
    ).with_changes(leading_lines=[_BLANK])
    first_lines[0] = first_lines[0].with_changes(leading_lines=_leading_lines(analysis, plan))
    replacements: dict[cst.CSTNode, Replacement] = {
        plan.statement: cst.FlattenSentinel([*first_lines, host_def, callback])
    }
    for d in plan.defs:
        replacements[d] = cst.RemovalSentinel.REMOVE
    for result, uses in plan.results:
        for use in uses:
            replacements[use] = cst.Name(result.name)
    return SolverCallback(replacements, imports)


def _plan(
    analysis: TracedAnalysis, call: cst.Call, solver: Solver, context: TracedFunction
) -> _Plan | str:
    """What the rewrite of the solve moves and passes, or why there is no rewrite."""
    if any(reason.name in _DIFFERENTIATING for reason in context.reasons):
        return "`jax.pure_callback` cannot be differentiated: use a JAX solver"
    statement = analysis.simple_statement(call)
    small = statement.body[0] if statement is not None and len(statement.body) == 1 else None
    if (
        statement is None
        or not isinstance(small, cst.Assign)
        or len(small.targets) != 1
        or not isinstance(small.targets[0].target, cst.Name)
        or small.value is not call
    ):
        return "its result is not assigned to a name"
    target = small.targets[0].target
    results = _results(analysis, target, solver)
    if isinstance(results, str):
        return results
    start = _start(call, solver)
    if start is None and any(r.like is Like.START for r, _ in results):
        return "the starting point is not given"
    defs = _moved_definitions(analysis, statement, call)
    if isinstance(defs, str):
        return defs
    if start is not None and _reads_any(start, {d.name.value for d in defs}):
        return "the starting point is computed by a function defined for the solve"
    start_name = ""
    if start is not None and analysis.is_traced(start):
        if any(name.startswith(_HOST_LIBRARIES) for name in _callees(analysis, start)):
            return "the starting point is computed by NumPy or SciPy from a traced value"
        assert solver.start is not None
        start_name = fresh_name(analysis, solver.start[0], [r.name for r, _ in results])
    operands, frozen = _host_parameters(analysis, [*defs, statement], start)
    if start_name:
        operands.insert(0, start_name)
    return _Plan(statement, defs, results, start, start_name, operands, frozen)


def _leading_lines(analysis: TracedAnalysis, plan: _Plan) -> Sequence[cst.EmptyLine]:
    """The lines before the rewrite: the statement's, or none when nothing stays above it
    in its block (the definitions moved away were all there was)."""
    block = analysis.parent(plan.statement)
    assert isinstance(block, cst.IndentedBlock)  # `_moved_definitions` made sure
    before = block.body[: block.body.index(plan.statement)]
    return () if all(node in plan.defs for node in before) else plan.statement.leading_lines


def _callees(analysis: TracedAnalysis, node: cst.CSTNode) -> set[str]:
    """The full names of what the calls in `node` call."""
    return {name for call in calls_in(node) for name in analysis.imported_names(call.func)}


def _names(
    analysis: TracedAnalysis, at: cst.CSTNode
) -> tuple[str, str, str, list[ImportNeeded]] | str:
    """How the rewrite names `jax`, `jax.numpy` and `numpy` at `at`, and the imports needed."""
    jax_name, jax_imports = jax_module_name(analysis, at)
    jnp_name, jnp_imports = jax_numpy_name(analysis, at)
    np_name, np_imports = numpy_name(analysis, at)
    if not (jax_name and jnp_name and np_name):
        return "`jax`, `jax.numpy` or `numpy` cannot be named here"
    return jax_name, jnp_name, np_name, [*jax_imports, *jnp_imports, *np_imports]


def _results(
    analysis: TracedAnalysis, target: cst.Name, solver: Solver
) -> list[tuple[_Result, list[cst.CSTNode]]] | str:
    """What the host function gives back, with the reads in traced code each replaces (the
    fields `res.x` read, or nothing for a solver that returns the value itself)."""
    if len(analysis.assignments(target)) != 1:
        return f"`{target.value}` is bound more than once"
    uses = references(analysis, target)
    if not uses:
        return "its result is not used"
    if solver.returns is not None:
        return [(_Result(target.value, solver.returns, target.value), [])]
    by_field: dict[str, list[cst.CSTNode]] = {}
    for use in uses:
        parent = analysis.parent(use)
        if not (
            isinstance(parent, cst.Attribute)
            and parent.value is use
            and parent.attr.value in solver.fields
        ):
            known = ", ".join(f"`.{f}`" for f in solver.fields)
            return f"`{target.value}` is used other than through its fields {known}"
        by_field.setdefault(parent.attr.value, []).append(parent)
    found = []
    taken: list[str] = []
    for name, reads in by_field.items():
        local = fresh_name(analysis, f"{target.value}_{name}", taken)
        taken.append(local)
        found.append((_Result(local, solver.fields[name], f"{target.value}.{name}"), reads))
    return found


def _start(call: cst.Call, solver: Solver) -> cst.BaseExpression | None:
    """The starting point given to the solver (`x0=...`, or by position)."""
    if solver.start is None:
        return None
    keyword, position = solver.start
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == keyword:
            return arg.value
    positional = [arg for arg in call.args if arg.keyword is None and not arg.star]
    return positional[position].value if position < len(positional) else None


def _reads_any(node: cst.CSTNode | None, names: set[str]) -> bool:
    return node is not None and any(n.value in names for n in names_read(node))


def _moved_definitions(
    analysis: TracedAnalysis, statement: cst.SimpleStatementLine, call: cst.Call
) -> list[cst.FunctionDef] | str:
    """The functions defined in the statement's block for the solve alone (read only in
    `call`), in their order: they move into the host function."""
    block = analysis.parent(statement)
    if not isinstance(block, cst.IndentedBlock):
        return "the solve is not in a function's block"
    found: list[cst.FunctionDef] = []
    for name in names_read(call):
        for assignment in analysis.assignments(name):
            node = assignment.node
            if not isinstance(node, cst.FunctionDef) or node in found:
                continue
            if node not in block.body or block.body.index(node) > block.body.index(statement):
                return f"`{name.value}` is not defined before the solve in its block"
            if not all(analysis.inside(a.node, call) for a in assignment.references):
                return f"`{name.value}` is also used outside the solve"
            found.append(node)
    return sorted(found, key=block.body.index)


def _host_parameters(
    analysis: TracedAnalysis, moved: Sequence[Statement], start: cst.BaseExpression | None
) -> tuple[list[str], list[str]]:
    """The locals of the traced function that the moved code reads (but in the starting
    point, which is computed before): those holding tracers become the callback's operands,
    the others defaults of the host function's parameters."""
    operands: dict[str, None] = {}
    frozen: dict[str, None] = {}
    for statement in moved:
        for name in names_read(statement):
            if start is not None and analysis.inside(name, start) and analysis.is_traced(start):
                continue
            bindings = analysis.assignments(name)
            local = [a for a in bindings if isinstance(a.scope, FunctionScope)]
            if not local or all(
                moves_with(analysis, a.scope, moved) or _bound_by(analysis, a, moved) for a in local
            ):
                continue
            if any(_holds_tracer(analysis, a) for a in local):
                operands[name.value] = None
            else:
                frozen[name.value] = None
    return list(operands), [n for n in frozen if n not in operands]


def _bound_by(
    analysis: TracedAnalysis, assignment: Assignment, moved: Sequence[cst.CSTNode]
) -> bool:
    return any(analysis.inside(assignment.node, node) for node in moved)


def _holds_tracer(analysis: TracedAnalysis, assignment: Assignment) -> bool:
    """Whether the binding holds a tracer: a traced parameter of its function, the binding of
    a traced value, or a value traced where traced code reads it."""
    node = assignment.node
    if isinstance(node, cst.Param):
        function = analysis.functions.get(assignment.scope.node)  # type: ignore[attr-defined]
        return function is not None and node.name.value in function.traced_params
    value = _bound_value(analysis, node)
    if value is not None and analysis.is_traced(value):
        return True
    return any(
        isinstance(access.node, cst.Name) and analysis.is_traced(access.node)
        for access in assignment.references
    )


def _bound_value(analysis: TracedAnalysis, target: cst.CSTNode) -> cst.BaseExpression | None:
    """The value an assignment or a `for` binds `target` (a name, maybe in a tuple) from."""
    node: cst.CSTNode | None = target
    while node is not None and not isinstance(node, cst.BaseSmallStatement | cst.For):
        node = analysis.parent(node)
    if isinstance(node, cst.Assign | cst.AnnAssign | cst.AugAssign):
        return node.value
    return node.iter if isinstance(node, cst.For) else None


def _shape_dtype(like: Like, start: str, jnp_name: str) -> str:
    """`jax.ShapeDtypeStruct`'s arguments for a result that is `like` (`start`: the code of
    the starting point)."""
    if like is Like.START:
        return f"{jnp_name}.shape({start}), {jnp_name}.result_type({start})"
    dtype = {Like.FLOAT: "float", Like.INT: "int", Like.BOOL: "bool"}[like]
    return f"(), {jnp_name}.result_type({dtype})"


def _short(solver: Solver) -> str:
    return solver.function.rsplit(".", 1)[-1]
