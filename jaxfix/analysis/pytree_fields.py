"""The fields a module's pytree classes declare as metadata (`flax.struct.field(pytree_node=False)`,
`eqx.field(static=True)`, `jax.tree_util.register_dataclass(meta_fields=...)`, the aux data a
`tree_flatten` returns): jax keeps them out of the leaves, so they are Python values even in
traced code. Found per class, so that other modules of a run can be told which attributes of an
instance of the class are static (`jaxfix.analysis.project.ModuleFacts.static_classes`)."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from jaxfix.analysis.declared_members import python_valued_members
from jaxfix.analysis.summaries import Module, class_lineage, qualified_name
from jaxfix.analysis.transform_arguments import is_constant, literal_elements
from jaxfix.analysis.walk import PUSHERS
from jaxfix.models.transforms import FIELDLESS_PYTREE_BASES, PARTIAL

# Among a class's metadata fields told to other modules: every field of the class is one (no
# field is named so).
METADATA_ONLY = "*"

_STATIC_FIELD_MAKERS = frozenset({"static_field", "field"})
_REGISTER = "register_dataclass"
# `register_dataclass(cls, data, meta)`, `partial(register_dataclass, data, meta)`: the index
# of the metadata names among the arguments.
_META_POSITION = 2


def static_fields_by_class(module: Module) -> dict[str, frozenset[str]]:
    """Each class of the module that declares metadata fields, with their names (its own and
    those of its bases defined in the module)."""
    own = {name: _own_static(cls, module) for name, cls in module.classes.items()}
    for call in _register_calls(module):
        first = call.args[0] if call.args else None
        if isinstance(first, ast.Name) and first.id in own:
            own[first.id] |= _meta_fields(call)
    found: dict[str, frozenset[str]] = {}
    for name in own:
        fields = set().union(*(own.get(base, set()) for base in class_lineage(name, module)))
        if fields:
            found[name] = frozenset(fields)
    return found


def metadata_only_classes(module: Module) -> frozenset[str]:
    """The classes of the module whose every field is metadata: an instance holds no leaf, so
    no tracer (`register_dataclass(data_fields=[], meta_fields=[...])`, a `flax.struct`
    dataclass of `pytree_node=False` fields only). Not one that defines its own `__init__` or
    `tree_flatten` (what it holds is not its declared fields), nor one with a base that is
    not such a class of the module nor a pytree base without fields."""
    if module.metadata_only is None:
        module.metadata_only = frozenset(
            name
            for name, static in static_fields_by_class(module).items()
            if _metadata_only(name, static, module)
        )
    return module.metadata_only


def _metadata_only(name: str, static: frozenset[str], module: Module) -> bool:
    lineage = [module.classes[c] for c in class_lineage(name, module)]
    for cls in lineage:
        if any(
            qualified_name(b, module) not in FIELDLESS_PYTREE_BASES
            for b in _outer_bases(cls, module)
        ):
            return False
        if any(
            isinstance(s, ast.FunctionDef) and s.name in ("__init__", "tree_flatten")
            for s in cls.body
        ):
            return False
    fields = {f for cls in lineage for f in _declared_fields(cls)}
    return bool(fields) and fields <= static


def _outer_bases(cls: ast.ClassDef, module: Module) -> Iterator[ast.expr]:
    """The bases of `cls` that are not classes of the module (by name)."""
    for base in cls.bases:
        if not (isinstance(base, ast.Name) and base.id in module.classes):
            yield base


def _declared_fields(cls: ast.ClassDef) -> Iterator[str]:
    """The names a class body annotates (a dataclass's fields), but for `ClassVar`s."""
    for statement in cls.body:
        if (
            isinstance(statement, ast.AnnAssign)
            and isinstance(statement.target, ast.Name)
            and "ClassVar" not in ast.unparse(statement.annotation)
        ):
            yield statement.target.id


def top_level_static_classes(tree: ast.Module, module: Module) -> dict[str, list[str]]:
    """The classes defined at the top level of `tree` that declare metadata fields or
    properties of Python values, with their names (and `METADATA_ONLY` for a class whose every
    field is metadata): what the module tells the other modules of a run."""
    top = [node.name for node in tree.body if isinstance(node, ast.ClassDef)]
    fields = static_fields_by_class(module)
    only = metadata_only_classes(module)
    found = {}
    for name in top:
        static = fields.get(name, frozenset()) | python_valued_members(name, module)
        if static:
            found[name] = sorted(static | ({METADATA_ONLY} if name in only else set()))
    return found


def class_use_names(module: Module) -> set[str]:
    """The full names, through the module's imports, that the module may use another module's
    class by: what its parameters' annotations read and what it calls (a constructor). Where
    a class with static fields is used, its instances' fields are known. (Every call of the
    module is read: the names are made inline, not by `qualified_name`; a name no import
    binds is the module's own.)"""
    imports = module.imports
    found: set[str] = set()
    for function in module.nodes.values():
        args = function.args
        for param in [*args.posonlyargs, *args.args, *args.kwonlyargs]:
            if param.annotation is None:
                continue
            stack: list[ast.AST] = [param.annotation]
            push = stack.append
            while stack:
                node = stack.pop()
                kind = type(node)
                if kind is ast.Name or kind is ast.Attribute:
                    found.add(_imported_name(node, imports))
                PUSHERS[kind](node, push)
    for scope in module.scopes.values():
        for call in scope.calls:
            found.add(_imported_name(call.func, imports))
    found.discard("")
    return found


def _imported_name(node: ast.AST, imports: dict[str, str]) -> str:
    """`qualified_name(node, module)` of a dotted name whose first name an import binds; ""
    for any other."""
    parts: list[str] = []
    while type(node) is ast.Attribute:
        parts.append(node.attr)
        node = node.value
    head = imports.get(node.id) if type(node) is ast.Name else None
    if head is None:
        return ""
    if not parts:
        return head
    parts.append(head)
    parts.reverse()
    return ".".join(parts)


def static_attribute_names(module: Module) -> set[str]:
    """Every attribute name some pytree class of the module declares as metadata, and those
    a `register_dataclass` call of the module names (whatever class it registers)."""
    found: set[str] = set()
    for fields in static_fields_by_class(module).values():
        found |= fields
    for call in _register_calls(module):
        found |= _meta_fields(call)
    return found


def _own_static(cls: ast.ClassDef, module: Module) -> set[str]:
    """The metadata fields `cls` declares in its body or its decorators."""
    found: set[str] = set()
    for statement in cls.body:
        if (
            isinstance(statement, ast.AnnAssign)
            and isinstance(statement.target, ast.Name)
            and statement.value is not None
            and _static_field(statement.value, module)
        ):
            found.add(statement.target.id)
        if isinstance(statement, ast.FunctionDef) and statement.name == "tree_flatten":
            found |= _aux_attributes(statement)
    for decorator in cls.decorator_list:
        # `@functools.partial(jax.tree_util.register_dataclass, meta_fields=[...])`
        if isinstance(decorator, ast.Call) and _is_register_partial(decorator, module):
            found |= _meta_fields(decorator)
    return found


def _register_calls(module: Module) -> Iterator[ast.Call]:
    """The module's calls of `register_dataclass`, directly or through `functools.partial`."""
    if not _may_name(module, _REGISTER):
        return
    for scope in module.scopes.values():
        for call in scope.calls:
            if qualified_name(call.func, module).endswith(_REGISTER) or _is_register_partial(
                call, module
            ):
                yield call


def _is_register_partial(call: ast.Call, module: Module) -> bool:
    return (
        qualified_name(call.func, module) == PARTIAL
        and bool(call.args)
        and qualified_name(call.args[0], module).endswith(_REGISTER)
    )


def _meta_fields(call: ast.Call) -> set[str]:
    """The names given as `meta_fields`, by keyword or third by position (after the class in
    `register_dataclass(cls, data, meta)`, after the function in `partial(register_dataclass,
    data, meta)`)."""
    node = next((k.value for k in call.keywords if k.arg == "meta_fields"), None)
    if node is None and len(call.args) > _META_POSITION:
        node = call.args[_META_POSITION]
    if node is None:
        return set()
    return {e.value for e in literal_elements(node) if isinstance(e.value, str)}


def _may_name(module: Module, name: str) -> bool:
    """Whether the module's code may name `name`: it reads it, imports it (under any name) or
    reads an attribute of that name."""
    return (
        name in module.names_read
        or any(target.rsplit(".", 1)[-1] == name for target in module.imports.values())
        or any(name in scope.attributes for scope in module.scopes.values())
    )


def _static_field(value: ast.expr, module: Module) -> bool:
    """`field(pytree_node=False)`, `eqx.field(static=True)`, `static_field()`,
    `dataclasses.field(metadata=dict(static=True))` / `metadata={"static": True}`."""
    if not isinstance(value, ast.Call):
        return False
    name = qualified_name(value.func, module).rsplit(".", 1)[-1]
    if name == "static_field":
        return True
    if name not in _STATIC_FIELD_MAKERS:
        return False
    for keyword in value.keywords:
        if keyword.arg == "pytree_node" and is_constant(keyword.value, False):
            return True
        if keyword.arg == "static" and is_constant(keyword.value, True):
            return True
        if keyword.arg == "metadata" and _static_metadata(keyword.value):
            return True
    return False


def _static_metadata(value: ast.expr) -> bool:
    if isinstance(value, ast.Dict):
        return any(
            isinstance(k, ast.Constant) and k.value == "static" and is_constant(v, True)
            for k, v in zip(value.keys, value.values, strict=True)
        )
    if isinstance(value, ast.Call):
        return any(k.arg == "static" and is_constant(k.value, True) for k in value.keywords)
    return False


def _aux_attributes(flatten: ast.FunctionDef) -> set[str]:
    """`self.a` read in the aux data a `tree_flatten` returns (`return children, (self.a,)`)."""
    found: set[str] = set()
    for node in ast.walk(flatten):
        if not (isinstance(node, ast.Return) and isinstance(node.value, ast.Tuple)):
            continue
        if len(node.value.elts) == 2:
            for sub in ast.walk(node.value.elts[1]):
                if isinstance(sub, ast.Attribute) and isinstance(sub.value, ast.Name):
                    found.add(sub.attr)
    return found
