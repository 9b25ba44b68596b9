"""One walk over a module's LibCST tree, for the analysis on it (`jaxfix.fixes.tracing`): each
node's parent, the `global` / `nonlocal` names of each function, the attributes of each name;
and the values a method's code gives one attribute of its object."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

import libcst as cst

from jaxfix.fixes.syntax import FunctionNode
from jaxfix.fixes.traversal import children


@dataclass
class Owned:
    """What the module collector found directly inside one function body."""

    global_names: set[str] = field(default_factory=set)  # declared `global`
    nonlocal_names: set[str] = field(default_factory=set)  # declared `nonlocal`


NOTHING_OWNED = Owned()


class ModuleWalk:
    """One walk over the module: `global` / `nonlocal` names, by the function that owns them;
    the attributes of each name, and the names they are read on; and each node's parent.

    It walks with `traversal.children`, not a LibCST visit, which rebuilds every node (twice
    the time). A function's decorators, defaults and annotations belong to the enclosing
    function, its body to the function."""

    def __init__(self, module: cst.Module) -> None:
        self.parents: dict[cst.CSTNode, cst.CSTNode] = {}
        self.receivers: dict[str, set[str]] = defaultdict(set)  # `r.attr`: attr -> names r
        self.attributes: dict[str, list[cst.Attribute]] = defaultdict(list)  # attr -> `x.attr`s
        self.owned: dict[FunctionNode | None, Owned] = {None: Owned()}
        self.functions: list[FunctionNode] = []
        parents = self.parents
        todo: list[tuple[cst.CSTNode, FunctionNode | None]] = [(module, None)]
        while todo:
            node, owner = todo.pop()
            body = None
            # By exact type: LibCST's node classes have no subclasses, and `isinstance` goes
            # through `ABCMeta` (a third of this walk).
            if type(node) is cst.FunctionDef or type(node) is cst.Lambda:
                self.functions.append(node)
                self.owned[node] = Owned()
                body = node.body
            elif type(node) is cst.Attribute:
                self.attributes[node.attr.value].append(node)
                if type(node.value) is cst.Name:
                    self.receivers[node.attr.value].add(node.value.value)
            elif type(node) is cst.Global:
                self.owned[owner].global_names.update(n.name.value for n in node.names)
            elif type(node) is cst.Nonlocal:
                self.owned[owner].nonlocal_names.update(n.name.value for n in node.names)
            for child in children(node):
                parents[child] = node
                todo.append((child, node if child is body else owner))  # type: ignore[arg-type]


class AttributeValues(cst.CSTVisitor):
    """The values a method's code gives `receiver.name` (see `instance_attribute_values`)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.receiver: str | None = None
        self.values: list[cst.BaseExpression] = []
        self.unknown = False

    def _is_ours(self, target: cst.BaseExpression) -> bool:
        return (
            isinstance(target, cst.Attribute)
            and target.attr.value == self.name
            and isinstance(target.value, cst.Name)
            and target.value.value == self.receiver
        )

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            if self._is_ours(target.target):
                self.values.append(node.value)
            elif isinstance(target.target, cst.Tuple | cst.List):
                self.unknown |= any(
                    isinstance(e, cst.Element | cst.StarredElement) and self._is_ours(e.value)
                    for e in target.target.elements
                )

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if self._is_ours(node.target) and node.value is not None:
            self.values.append(node.value)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self.unknown |= self._is_ours(node.target)
