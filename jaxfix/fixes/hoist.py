"""The host-callback hoist: move a host-only statement out of the trace into
`jax.debug.callback(host_fn, *traced, ordered=True)`, so that it runs at execution time on
concrete values. Shared by every rule whose fix is "do this on the host".
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from types import UnionType

import libcst as cst
from libcst.metadata import Assignment, BuiltinAssignment, FunctionScope, Scope

from jaxfix.fixes.fix import ImportNeeded
from jaxfix.fixes.syntax import names_read, parameter_names
from jaxfix.fixes.tracing import Statement, TracedAnalysis
from jaxfix.fixes.traversal import children

_HOST_TARGETS = (cst.Attribute, cst.Subscript)
_KEY_ORDER_NOTE = "# A host callback gets a dict with its keys sorted: keep their order."
# `name=value` without spaces, as a keyword argument or a parameter's default is written.
TIGHT = cst.AssignEqual(
    whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")
)


def jax_module_name(analysis: TracedAnalysis, at: cst.CSTNode) -> tuple[str, list[ImportNeeded]]:
    """How `at` can refer to the `jax` module: the name of an `import jax` that runs before the
    code containing `at` is defined, or `jax` plus an import to add. Returns ("", []) when the
    name `jax` is taken by something else."""
    scope = analysis.scope_of(at)
    imported = _imported_jax_name(analysis, at)
    if imported is not None:
        return (imported, []) if _names_only_imports(scope, imported) else ("", [])
    if scope is not None and any(not isinstance(a, BuiltinAssignment) for a in scope["jax"]):
        return "", []
    return "jax", [ImportNeeded("jax")]


def jax_numpy_name(analysis: TracedAnalysis, at: cst.CSTNode) -> tuple[str, list[ImportNeeded]]:
    """How `at` can refer to `jax.numpy`: the alias a module-level import before it binds
    (`import jax.numpy as jnp`, `from jax import numpy as jnp`), or through `jax` (imported
    if needed); ("", []) when neither can be named."""
    scope = analysis.scope_of(at)
    for small in module_statements_before(analysis, at):
        name = _jax_numpy_binding(small)
        if name is not None and _names_only_imports(scope, name, cst.Import | cst.ImportFrom):
            return name, []
    jax_name, imports = jax_module_name(analysis, at)
    return (f"{jax_name}.numpy", imports) if jax_name else ("", [])


def numpy_name(analysis: TracedAnalysis, at: cst.CSTNode) -> tuple[str, list[ImportNeeded]]:
    """How `at` can refer to NumPy: the name a module-level `import numpy` (`as np`) before
    it binds, or `numpy` plus an import to add; ("", []) when neither can be named."""
    scope = analysis.scope_of(at)
    for small in module_statements_before(analysis, at):
        for alias in small.names if isinstance(small, cst.Import) else ():
            name = alias.evaluated_alias or "numpy"
            if alias.evaluated_name == "numpy" and _names_only_imports(scope, name):
                return name, []
    if scope is not None and any(not isinstance(a, BuiltinAssignment) for a in scope["numpy"]):
        return "", []
    return "numpy", [ImportNeeded("numpy")]


def module_statements_before(
    analysis: TracedAnalysis, at: cst.CSTNode
) -> Iterator[cst.BaseSmallStatement]:
    """The small statements of the module's top level that run before the one holding `at`."""
    top = _top_statement(analysis, at)
    for statement in analysis.module.body:
        if statement is top:
            return
        if isinstance(statement, cst.SimpleStatementLine):
            yield from statement.body


def _top_statement(analysis: TracedAnalysis, at: cst.CSTNode) -> cst.CSTNode:
    top = at
    while (parent := analysis.parent(top)) is not None and not isinstance(parent, cst.Module):
        top = parent
    return top


def _jax_numpy_binding(small: cst.BaseSmallStatement) -> str | None:
    """The name `import jax.numpy as jnp` / `from jax import numpy as jnp` binds."""
    if isinstance(small, cst.Import):
        for alias in small.names:
            if alias.evaluated_name == "jax.numpy" and alias.asname is not None:
                return alias.evaluated_alias
    if isinstance(small, cst.ImportFrom) and not isinstance(small.names, cst.ImportStar):
        module = small.module
        if module is not None and not small.relative and module.deep_equals(cst.Name("jax")):
            for alias in small.names:
                if alias.evaluated_name == "numpy":
                    return alias.evaluated_alias or "numpy"
    return None


def _imported_jax_name(analysis: TracedAnalysis, at: cst.CSTNode) -> str | None:
    """The name that a module-level `import jax` before the statement holding `at` binds."""
    top = _top_statement(analysis, at)
    for statement in analysis.module.body:
        if statement is top:
            break
        if not isinstance(statement, cst.SimpleStatementLine):
            continue
        for small in statement.body:
            if isinstance(small, cst.Import):
                for alias in small.names:
                    name = alias.evaluated_name
                    if alias.asname is None and (name == "jax" or name.startswith("jax.")):
                        return "jax"
                    if alias.asname is not None and name == "jax":
                        return alias.evaluated_alias or "jax"
    return None


def _names_only_imports(
    scope: Scope | None, name: str, imports: type | UnionType = cst.Import
) -> bool:
    """Whether `name`, read in `scope`, can only mean a module import (statements of kind
    `imports`; not a local look-alike such as `jax = _Pipeline()` in an enclosing function)."""
    if scope is None:
        return True
    return all(isinstance(a, Assignment) and isinstance(a.node, imports) for a in scope[name])


def is_host_only_target(analysis: TracedAnalysis, target: cst.BaseExpression) -> bool:
    """An assignment target whose new value is only seen by the host: an attribute or an item
    of an object from outside the traced function, or a name it declares `global`/`nonlocal`.
    (An item of a container the function builds itself may be read back in the trace.)"""
    if isinstance(target, _HOST_TARGETS):
        base: cst.BaseExpression = target
        while isinstance(base, _HOST_TARGETS):
            base = base.value
        return (
            isinstance(base, cst.Name)
            and not _built_locally(analysis, base)
            and not analysis.self_made_in_trace(base)
        )
    if isinstance(target, cst.Name):
        scope = analysis.scope_of(target)
        return isinstance(scope, FunctionScope) and target.value in analysis.declared_outer_names(
            analysis.owner_function(target)
        )
    if isinstance(target, cst.Tuple | cst.List):
        return all(is_host_only_target(analysis, e.value) for e in target.elements)
    return False


def _built_locally(analysis: TracedAnalysis, name: cst.Name) -> bool:
    """Whether `name` is assigned (not received as a parameter) in a function's body."""
    scope = analysis.scope_of(name)
    if scope is None:
        return False
    return any(
        isinstance(a, Assignment)
        and isinstance(a.scope, FunctionScope)
        and not isinstance(a.node, cst.Param)
        and name.value not in analysis.declared_outer_names(a.scope.node)
        for a in scope[name.value]
    )


def _walk_body(node: cst.CSTNode) -> list[cst.CSTNode]:
    found: list[cst.CSTNode] = []
    for child in children(node):
        if isinstance(child, cst.FunctionDef | cst.ClassDef | cst.Lambda):
            continue
        found.append(child)
        found.extend(_walk_body(child))
    return found


def hoist_statements(
    analysis: TracedAnalysis,
    statements: Sequence[Statement],
    payload_wrapping: Mapping[cst.BaseExpression, cst.BaseExpression],
    host_name: str,
    jax_name: str,
) -> list[cst.BaseStatement] | None:
    """`statements` (of one block, in order) rewritten as one nested host function plus its
    callback, to stand where the first is; None when they cannot be moved safely: one binds a
    name with `:=` (the binding would move into the host function), or none reads a traced
    name."""
    if any(map(binds_with_walrus, statements)):
        return None
    parameters = _host_parameters(analysis, statements)
    if parameters is None or not parameters[0]:
        return None
    traced, frozen = parameters
    given, projected = _projected(analysis, statements, traced, frozen)
    wrapping, in_order = _keeping_key_order(analysis, statements, given, frozen, payload_wrapping)
    frozen = [*frozen, *in_order]
    body = [restore for _, restores in in_order.values() for restore in restores]
    for statement in statements:
        moved: cst.CSTNode = statement
        for payload, wrapped in wrapping.items():
            moved = moved.deep_replace(payload, wrapped)
        for node, name in projected.items():
            moved = moved.deep_replace(node, cst.Name(name))
        assert isinstance(moved, cst.SimpleStatementLine | cst.BaseCompoundStatement)
        body.append(moved if body else moved.with_changes(leading_lines=()))
    first = statements[0]
    owner = analysis.owner_function(first)
    outer = sorted(
        analysis.declared_outer_names(owner) & set().union(*map(stored_names, statements))
    )
    declarations: list[cst.BaseStatement] = []
    if outer:
        declarations.append(
            cst.SimpleStatementLine([cst.Global([cst.NameItem(cst.Name(n)) for n in outer])])
            if _is_global(analysis, first, outer[0])
            else cst.SimpleStatementLine([cst.Nonlocal([cst.NameItem(cst.Name(n)) for n in outer])])
        )
    params = [cst.Param(cst.Name(name)) for name in given]
    params += [cst.Param(cst.Name(name), default=cst.Name(name), equal=TIGHT) for name in frozen]
    kept = [keeping for keeping, _ in in_order.values()]
    if kept:
        note = cst.EmptyLine(comment=cst.Comment(_KEY_ORDER_NOTE))
        kept[0] = kept[0].with_changes(leading_lines=[*_blank_line_before(analysis, first), note])
    host_def = cst.FunctionDef(
        name=cst.Name(host_name),
        params=cst.Parameters(params=params),
        body=cst.IndentedBlock([*declarations, *body]),
        leading_lines=[cst.EmptyLine(indent=False)]
        if kept
        else _blank_line_before(analysis, first),
    )
    # Ordered, the effects keep program order; JAX refuses that over several devices.
    ordered = "" if analysis.may_run_sharded() else ", ordered=True"
    callback = cst.parse_statement(
        f"{jax_name}.debug.callback({', '.join([host_name, *given.values()])}{ordered})\n"
    ).with_changes(leading_lines=[cst.EmptyLine(indent=False)])
    return [*kept, host_def, callback]


def gating_if(
    analysis: TracedAnalysis, node: cst.CSTNode, host_only: Callable[[Statement], bool]
) -> cst.If | None:
    """The `if` that `node` (a statement of its branches, or a part of its test) belongs to,
    when the `if` only gates host effects: each statement of its branches is host-only and its
    test reads a traced value, which it needs concrete (`if int(step) % every == 0: save(p)`).
    Such an `if` moves to the host whole, test and all. Not an `elif` chain."""
    current = node
    while not isinstance(parent := analysis.parent(current), cst.If):
        if parent is None or isinstance(parent, cst.FunctionDef | cst.Lambda | cst.Module):
            return None
        current = parent
    gate = parent
    if isinstance(gate.orelse, cst.If) or isinstance(analysis.parent(gate), cst.If):
        return None
    branches = [*gate.body.body, *(gate.orelse.body.body if gate.orelse else ())]
    in_test = analysis.inside(node, gate.test)
    if not in_test and not any(node is statement for statement in branches):
        return None
    if not all(isinstance(s, Statement) and host_only(s) for s in branches):
        return None
    return gate if analysis.traced_names(gate.test) else None


def values_of(function: cst.FunctionDef | cst.Lambda, name: str) -> list[cst.BaseExpression]:
    """Every value `function`'s own code assigns to `name` (`name = value`, annotated too)."""
    found: list[cst.BaseExpression] = []
    for node in _walk_body(function):
        if isinstance(node, cst.Assign):
            targets = [target.target for target in node.targets]
        elif isinstance(node, cst.AnnAssign) and node.value is not None:
            targets = [node.target]
        else:
            continue
        if any(isinstance(t, cst.Name) and t.value == name for t in targets):
            assert node.value is not None
            found.append(node.value)
    return found


def reordered_dict(analysis: TracedAnalysis, statements: Sequence[Statement], name: str) -> bool:
    """Whether `name`, as `statements` (of one function) read it, may be a dict whose keys are
    not in the sorted order in which a host callback receives them, or a jitted function
    returns them (`{"h": x, "g": y}`): jax flattens a dict as a tree. Also one a caller gives
    the function (`TracedAnalysis.reorders`), and one the function binds `name` to anywhere."""
    if not name.isidentifier():
        return False
    reads = (read for s in statements for read in names_read(s) if read.value == name)
    if any(map(analysis.reorders, reads)):
        return True
    function = analysis.owner_function(statements[0])
    if function is None:
        return False
    for value in values_of(function, name):
        if isinstance(value, cst.DictComp):
            return True
        if not isinstance(value, cst.Dict):
            continue
        keys = [e.key for e in value.elements if isinstance(e, cst.DictElement)]
        texts = [k.evaluated_value for k in keys if isinstance(k, cst.SimpleString)]
        strings = [t for t in texts if isinstance(t, str)]
        if len(strings) != len(value.elements) or strings != sorted(strings):
            return True
    return False


def _keeping_key_order(
    analysis: TracedAnalysis,
    statements: Sequence[Statement],
    given: Mapping[str, str],
    frozen: Sequence[str],
    payload_wrapping: Mapping[cst.BaseExpression, cst.BaseExpression],
) -> tuple[
    dict[cst.BaseExpression, cst.BaseExpression],
    dict[str, tuple[cst.BaseStatement, list[cst.BaseStatement]]],
]:
    """The payload wrapping of the moved statements, less that of the parameters whose keys
    the host function puts back in order (`_in_key_order`): it wraps those itself, first
    (`jax.device_get(tree)` would sort them again)."""
    restored = [
        name
        for name, argument in given.items()
        if name == argument and reordered_dict(analysis, statements, name)
    ]
    wrapping = {
        payload: wrapped
        for payload, wrapped in payload_wrapping.items()
        if not (isinstance(payload, cst.Name) and payload.value in restored)
    }
    wrappers = {
        payload.value: wrapped.func
        for payload, wrapped in payload_wrapping.items()
        if payload not in wrapping
        and isinstance(payload, cst.Name)
        and isinstance(wrapped, cst.Call)
    }
    taken = [*given, *frozen]
    return wrapping, _in_key_order(analysis, statements[0], restored, taken, wrappers)


def _in_key_order(
    analysis: TracedAnalysis,
    first: Statement,
    names: Sequence[str],
    taken: Sequence[str],
    wrappers: Mapping[str, cst.BaseExpression],
) -> dict[str, tuple[cst.BaseStatement, list[cst.BaseStatement]]]:
    """For each of `names`, parameters of the host function that may receive a dict whose keys
    are out of sorted order (`reordered_dict`: jax hands a callback a dict rebuilt with its keys
    sorted), by the name that keeps its keys: the statement that keeps them at trace time,
    where the dict is still the caller's, and the first statement of the host function, which
    puts them back in that order (after checking that it is a dict, where the analysis cannot
    be sure), once the dict is given to what the statements wrapped it in (`wrappers`:
    `jax.device_get`, which sorts them)."""
    found: dict[str, tuple[cst.BaseStatement, list[cst.BaseStatement]]] = {}
    used = list(taken)
    for name in names:
        keys = fresh_name(analysis, f"{name}_keys", used)
        used.append(keys)
        restores: list[cst.BaseStatement] = []
        if name in wrappers:
            call = cst.Call(wrappers[name], [cst.Arg(cst.Name(name))])
            restores.append(
                cst.SimpleStatementLine([cst.Assign([cst.AssignTarget(cst.Name(name))], call)])
            )
        rebuilt = f"{name} = {{k: {name}[k] for k in {keys}}}"
        if _surely_a_dict(analysis, first, name):
            kept = f"{keys} = tuple({name})\n"
            restores.append(cst.parse_statement(f"{rebuilt}\n"))
        else:
            kept = f"{keys} = tuple({name}) if isinstance({name}, dict) else None\n"
            restores.append(cst.parse_statement(f"if {keys} is not None:\n    {rebuilt}\n"))
        found[keys] = (cst.parse_statement(kept), restores)
    return found


def _surely_a_dict(analysis: TracedAnalysis, statement: Statement, name: str) -> bool:
    """Whether the function of `statement` binds `name` only to dict displays (not a
    parameter)."""
    function = analysis.owner_function(statement)
    if function is None or name in parameter_names(function):
        return False
    values = values_of(function, name)
    return bool(values) and all(isinstance(v, cst.Dict | cst.DictComp) for v in values)


def _projected(
    analysis: TracedAnalysis,
    statements: Sequence[Statement],
    traced: Sequence[str],
    taken: Sequence[str],
) -> tuple[dict[str, str], dict[cst.CSTNode, str]]:
    """What the callback is given, by the host function's parameter name (the argument's
    code), and the nodes of the statements that the parameters stand for. A traced name the
    statements read only through constant keys and fields (`grads["w"]`, `state.step`) is
    given as those parts alone: the host gets what it reads, not the whole tree."""
    given: dict[str, str] = {}
    projected: dict[cst.CSTNode, str] = {}
    used = set(taken) | set(traced)
    for name in traced:
        reads = [n for s in statements for n in names_read(s) if n.value == name]
        parts = [_projection(analysis, read) for read in reads]
        if not reads or any(part is read for part, read in zip(parts, reads, strict=True)):
            given[name] = name
            continue
        by_code: dict[str, str] = {}
        for part in parts:
            code = cst.Module([]).code_for_node(part)
            if code not in by_code:
                by_code[code] = fresh_name(analysis, _part_name(code), sorted(used))
                used.add(by_code[code])
                given[by_code[code]] = code
            projected[part] = by_code[code]
    return given, projected


def _projection(analysis: TracedAnalysis, read: cst.Name) -> cst.BaseExpression:
    """The longest chain of constant items and fields read from `read` (`read` itself when
    there is none): `grads["w"]`, `state.params["b"]`, `out[0]`; not a method's receiver."""
    node: cst.BaseExpression = read
    while True:
        parent = analysis.parent(node)
        if isinstance(parent, cst.Subscript) and parent.value is node and _constant_key(parent):
            node = parent
        elif isinstance(parent, cst.Attribute) and parent.value is node:
            grand = analysis.parent(parent)
            if isinstance(grand, cst.Call) and grand.func is parent:
                return node
            node = parent
        else:
            return node


def _constant_key(subscript: cst.Subscript) -> bool:
    if len(subscript.slice) != 1:
        return False
    element = subscript.slice[0].slice
    return isinstance(element, cst.Index) and isinstance(
        element.value, cst.SimpleString | cst.Integer
    )


def _part_name(code: str) -> str:
    """A parameter name for a part: `grads["w"]` -> `grads_w`."""
    return "_".join(word for word in re.split(r"\W+", code) if word) or "part"


def binds_with_walrus(statement: Statement) -> bool:
    """Whether `statement` binds a name of its function with `:=`: moving it elsewhere would
    move the binding away from the code that reads it."""
    return any(isinstance(node, cst.NamedExpr) for node in _walk_body(statement))


def _blank_line_before(analysis: TracedAnalysis, statement: cst.CSTNode) -> list[cst.EmptyLine]:
    """The statement's own leading lines, plus the blank line Black and Ruff put before a
    nested `def` that follows other statements (so formatting the result changes nothing)."""
    lines = list(getattr(statement, "leading_lines", ()))
    block = analysis.parent(statement)
    first = isinstance(block, cst.IndentedBlock) and block.body[0] is statement
    if not first and not any(line.comment is None for line in lines[:1]):
        lines.insert(0, cst.EmptyLine(indent=False))
    return lines


def _host_parameters(
    analysis: TracedAnalysis, statements: Sequence[Statement]
) -> tuple[list[str], list[str]] | None:
    """Traced names to pass through the callback, and host locals to freeze as defaults; None
    when the statements use what a `with` that stays behind manages (`with open(p) as f:`
    around them: the block exits when the trace leaves it, before the callback runs), or pass
    an instance of a dataclass or named tuple (a callback takes arrays)."""
    inside = set().union(*map(_bound_inside, statements))
    traced: dict[str, None] = {}
    frozen: dict[str, None] = {}
    traced_here = {name for s in statements for name in analysis.traced_names(s)}
    outer = analysis.declared_outer_names(analysis.owner_function(statements[0]))
    for name in (n for s in statements for n in names_read(s)):
        if name.value in inside or name.value in outer:
            continue
        scope = analysis.scope_of(name)
        if scope is None:
            continue
        assignments = [a for a in scope[name.value] if isinstance(a, Assignment)]
        if not assignments or all(not isinstance(a.scope, FunctionScope) for a in assignments):
            continue  # a module global or builtin: the host function sees it as well
        if all(moves_with(analysis, a.scope, statements) for a in assignments):
            continue  # a parameter of a lambda or `def` that moves too (`lambda leaf: ...`)
        if any(_managed_by_a_with(analysis, a.node, statements) for a in assignments):
            return None
        if name.value in traced_here:
            if analysis.holds_record(name):
                return None  # a dataclass's fields may be no arrays: no callback argument
            traced[name.value] = None
        else:
            frozen[name.value] = None
    return list(traced), [n for n in frozen if n not in traced]


def _managed_by_a_with(
    analysis: TracedAnalysis, bound: cst.CSTNode, statements: Sequence[Statement]
) -> bool:
    """Whether `bound` is (in) the target of a `with ... as` outside `statements`."""
    binder = analysis.parent(bound)
    while isinstance(binder, cst.Element | cst.StarredElement | cst.Tuple | cst.List):
        binder = analysis.parent(binder)
    item = analysis.parent(binder) if isinstance(binder, cst.AsName) else None
    return isinstance(item, cst.WithItem) and not any(analysis.inside(item, s) for s in statements)


def moves_with(analysis: TracedAnalysis, scope: Scope, statements: Sequence[Statement]) -> bool:
    """Whether `scope` is that of a lambda or function defined in one of `statements`."""
    node = getattr(scope, "node", None)
    return isinstance(node, cst.CSTNode) and any(analysis.inside(node, s) for s in statements)


def _bound_inside(statement: cst.CSTNode) -> set[str]:
    names: set[str] = set()
    for node in [statement, *_walk_body(statement)]:
        if isinstance(node, cst.WithItem) and node.asname is not None:
            names.update(_target_names(node.asname.name))
        elif isinstance(node, cst.For | cst.CompFor):  # `:=` is refused before this
            names.update(_target_names(node.target))
    return names


def stored_names(statement: cst.CSTNode) -> set[str]:
    """The names `statement` assigns (not inside nested functions)."""
    names: set[str] = set()
    for node in [statement, *_walk_body(statement)]:
        if isinstance(node, cst.AssignTarget | cst.AugAssign | cst.AnnAssign):
            names.update(_target_names(node.target))
    return names


def bound_names(statement: cst.CSTNode) -> set[str]:
    """The names `statement` binds in its function: what it assigns, the targets of its `for`
    and `with`, the `def` or `class` it is, and what it imports."""
    names = stored_names(statement) | _bound_inside(statement)
    if isinstance(statement, cst.FunctionDef | cst.ClassDef):
        names.add(statement.name.value)
    for node in [statement, *_walk_body(statement)]:
        if isinstance(node, cst.Import | cst.ImportFrom) and not isinstance(
            node.names, cst.ImportStar
        ):  # `import a.b` binds `a`
            names.update(a.evaluated_alias or a.evaluated_name.split(".")[0] for a in node.names)
    return names


def _target_names(target: cst.BaseExpression) -> set[str]:
    if isinstance(target, cst.Name):
        return {target.value}
    if isinstance(target, cst.Tuple | cst.List):
        return {n for e in target.elements for n in _target_names(e.value)}
    if isinstance(target, cst.StarredElement):
        return _target_names(target.value)
    return set()


def _is_global(analysis: TracedAnalysis, statement: cst.CSTNode, name: str) -> bool:
    function = analysis.owner_function(statement)
    return not isinstance(function, cst.FunctionDef) or name in analysis.declared_global(function)


def fresh_name(analysis: TracedAnalysis, base: str, reserved: Sequence[str]) -> str:
    """`base`, or `base_2`, `base_3`… : a name no binding in the module uses yet."""
    taken = set(reserved) | analysis.all_names()
    candidate, number = base, 1
    while candidate in taken:
        number += 1
        candidate = f"{base}_{number}"
    return candidate
