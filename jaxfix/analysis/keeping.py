"""What traced code keeps, seen on CPython's tree: whether a value is an array of the trace as
its syntax shows, whether an object is a list, dict, set, deque or queue, where an object lives
when it outlives the trace (`Outliving`), whether a method's `self` is a plain Python object,
and which statements and calls keep a leaking value in such an object.

These decide where a traced value outlives the trace (`leak-in-traced`). They are answered
here once, on the whole file, for the rules (through `jaxfix.fixes.tracing`) and for the first
pass that picks the statements LibCST must see (`jaxfix.analysis.candidates`): the two can never
disagree.
Names are resolved as Python resolves them: a function's own bindings, then the enclosing
functions' (not class bodies'), then the module's, then the builtins.
"""

from __future__ import annotations

import ast
import builtins
import enum
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field, replace

from jaxfix.analysis.names import dotted, of_the_program
from jaxfix.analysis.statements import call_arguments, inner_statements
from jaxfix.analysis.tracing import Facts
from jaxfix.analysis.values import Kind, Staged
from jaxfix.analysis.walk import children

MODULE = "<module>"
_BUILTINS = frozenset(dir(builtins))
# Functions whose result is an array when their arguments are (or a Python number, for the
# conversions, which fail on a tracer: the statement fails at once).
ARRAY_NAMESPACES = ("jax.numpy.", "jax.lax.", "jax.nn.", "jax.scipy.", "jax.random.")
CONVERSIONS = frozenset({"builtins.float", "builtins.int", "builtins.complex", "builtins.str"})
# Those that raise on a tracer (`ConcretizationTypeError`), and the array methods that do.
RAISING_CONVERSIONS = frozenset({"builtins.float", "builtins.int", "builtins.complex"})
RAISING_METHODS = frozenset({"item"})
NOT_ARRAYS = frozenset({"tobytes", "dumps", "tolist"})  # methods of arrays that return none
CONTAINER_MAKERS = frozenset(
    {"builtins.list", "builtins.dict", "builtins.set"}
    | {"collections.deque", "collections.defaultdict", "collections.OrderedDict"}
    | {"collections.Counter", "queue.Queue", "queue.SimpleQueue", "queue.LifoQueue"}
    | {"queue.PriorityQueue"}
)
# Methods that put their argument into a list, deque or queue: method -> index of the value.
SEQUENCE_METHODS = {
    "append": 0,
    "extend": 0,
    "insert": 1,
    "appendleft": 0,
    "extendleft": 0,
    "put": 0,
    "put_nowait": 0,
}
# Methods of dicts and sets (None: every argument), counted only on a known dict or set.
MAPPING_METHODS: dict[str, int | None] = {"add": 0, "update": None, "setdefault": 1}
MUTATORS = frozenset(SEQUENCE_METHODS) | frozenset(MAPPING_METHODS)
_CONTAINER_DISPLAYS = (ast.List, ast.Dict, ast.Set, ast.ListComp, ast.DictComp, ast.SetComp)
# Objects made by these keep their state in a way their transforms handle (Flax NNX variables,
# Equinox and Haiku modules), or belong to another rule (JF105: multiprocessing queues).
NOT_OURS = ("flax.", "equinox.", "haiku.", "multiprocessing.", "torch.multiprocessing.")
# Base classes whose `self` is a plain Python object (anything else may be a framework module).
PLAIN_BASES = frozenset({"builtins.object", "abc.ABC", "typing.Generic"})
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
MAX_DEPTH = 8


@dataclass(frozen=True)
class Binding:
    """One binding of a name in a scope: the value it assigns (`x = value`, `x: T = value`, a
    parameter's default), None when it assigns no one expression (`for x in`, `a, x = ...`);
    `imported` for an import, `parameter` for a parameter, `node` for the statement binding a
    `def` or `class`."""

    value: ast.expr | None = None
    imported: bool = False
    parameter: bool = False
    node: ast.stmt | None = None


class Holder(enum.Enum):
    """What outlives a call of the traced function (see `Outliving`)."""

    GLOBAL = "global"  # a name the function declares `global`
    NONLOCAL = "nonlocal"  # ... or `nonlocal`
    MODULE = "module"  # a module-level object
    SELF = "self"  # an attribute of `self` of a plain class
    DEFAULT = "default"  # a parameter's (mutable) default
    ENCLOSING = "enclosing"  # an object of an enclosing function that is not traced


@dataclass(frozen=True)
class Outliving:
    """Where an object written to from traced code lives when it outlives the trace: `holder`,
    for the name `root` (whose attribute it may be), of the function `enclosing`."""

    holder: Holder
    root: str
    enclosing: str = ""
    # What it keeps is a function that closes over tracers (`lambda: jnp.all(z > 0)`).
    closure: bool = False


@dataclass
class _ScopeIndex:
    """The bindings of one function's (or the module's) own code, by name."""

    bindings: dict[str, list[Binding]] = field(default_factory=lambda: defaultdict(list))
    global_names: set[str] = field(default_factory=set)
    nonlocal_names: set[str] = field(default_factory=set)


class Keeping:
    """The answers for one analysed file."""

    def __init__(self, facts: Facts) -> None:
        self.module = facts.module
        self.facts = facts
        self._scopes: dict[str, _ScopeIndex] = {}
        self._classes: dict[ast.AST, ast.ClassDef] | None = None  # method -> its class
        self._closure_params: dict[str, set[str]] | None = None  # see `closure_params`

    # ----- values ------------------------------------------------------------------------

    def leaks(self, node: ast.expr, fid: str, raising: bool = True) -> bool:
        """`node` is an array (or holds one) of the trace, as far as the syntax shows: a traced
        name, an operation on one, or a call of jax's array functions or an array's methods.
        What an unknown function returns may be static (a tree structure, a string made during
        `eval_shape`), and a serialization is another rule's: neither counts. Without
        `raising`, neither does a conversion that raises on a tracer (`float(loss)`,
        `loss.item()`): what it would give is never stored, the conversion fails first."""
        if isinstance(node, ast.Name | ast.Attribute):
            return self.is_traced(node, fid)
        if isinstance(node, ast.Call):
            return (
                self._array_call(node, fid, raising)
                or self._record_of_traced(node, fid)
                or self._formats_leaking(node, fid, raising)
            )
        if isinstance(node, ast.Subscript):
            return self.leaks(node.value, fid, raising)
        if isinstance(node, ast.JoinedStr):
            formatted = (v.value for v in node.values if isinstance(v, ast.FormattedValue))
            return any(self.leaks(value, fid, raising) for value in formatted)
        if isinstance(node, (ast.Lambda, ast.Constant, *_COMPREHENSIONS)):
            return False
        if isinstance(node, ast.BinOp | ast.UnaryOp) and any(map(self._array, _operands(node))):
            return self.is_traced(node, fid)  # staged: on a jax array made outside the trace
        return any(self.leaks(part, fid, raising) for part in _operands(node))

    def _array(self, node: ast.expr) -> bool:
        """`node` is a name or attribute holding a jax array made outside the function reading
        it (`HOST_ARRAY`, or the staging of other code): an operation on it is staged."""
        if not isinstance(node, ast.Name | ast.Attribute):
            return False
        value = self.module.value_of(node)
        return (
            value is not None
            and value.kind is Kind.TRACED
            and not value.parts()
            and any(isinstance(source, Staged) for source in value.sources)
        )

    def _formats_leaking(self, call: ast.Call, fid: str, raising: bool) -> bool:
        """`"loss {}".format(loss)`: the text of a tracer, as `str(loss)` and an f-string."""
        func = call.func
        return (
            isinstance(func, ast.Attribute)
            and func.attr == "format"
            and isinstance(func.value, ast.Constant)
            and isinstance(func.value.value, str)
            and any(self.leaks(_unstarred(arg), fid, raising) for arg in call_arguments(call))
        )

    def is_traced(self, node: ast.AST, fid: str) -> bool:
        """`node`, in the code of `fid`, is certainly a tracer and no tracer guard protects it."""
        return fid in self.facts.reasons and self.facts.tracer_at(node)

    def _record_of_traced(self, call: ast.Call, fid: str) -> bool:
        """A dataclass or named tuple of the module made with a tracer in a field."""
        value = self.module.value_of(call)
        return value is not None and value.fields is not None and self.is_traced(call, fid)

    def _array_call(self, call: ast.Call, fid: str, raising: bool) -> bool:
        func = call.func
        name = self.full_name(func, fid)
        if name is not None:
            converts = name in CONVERSIONS and (raising or name not in RAISING_CONVERSIONS)
            if name.startswith(ARRAY_NAMESPACES) and self.is_traced(call, fid):
                return True  # staged: under `jit`, `random.split(KEY)` of a constant too
            array = name.startswith(ARRAY_NAMESPACES) or converts
            arguments = call_arguments(call)
            return array and any(self.leaks(_unstarred(arg), fid, raising) for arg in arguments)
        return (
            isinstance(func, ast.Attribute)
            and func.attr not in NOT_ARRAYS
            and (raising or func.attr not in RAISING_METHODS)
            and self.leaks(func.value, fid, raising)
        )

    # ----- writes ------------------------------------------------------------------------

    def kept_store(self, statement: ast.stmt, fid: str) -> Outliving | None:
        """Where `statement`, in the code of `fid`, stores a leaking value that outlives the
        trace: `g = v` for a name declared `global` / `nonlocal`, `box[k] = v` into a
        container (not at a traced key), `obj.name = v`; None for any other statement."""
        if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
            target, value = statement.targets[0], statement.value
        elif isinstance(statement, ast.AugAssign | ast.AnnAssign) and statement.value:
            target, value = statement.target, statement.value
        else:
            return None
        if (
            isinstance(statement, ast.AugAssign)
            and self._array(statement.target)
            and self.is_traced(statement, fid)
        ):
            return self._kept_target(target, fid)  # `self.count += 1` on a jax array, staged
        unpacking = isinstance(target, ast.Tuple | ast.List)
        for part, stored in _unpacked(target, value):
            if unpacking and not isinstance(part, ast.Name):
                continue  # only a `global` / `nonlocal` name, as `self.a, self.b = ...` may
                # write into an object the trace was given
            found = self._kept_in(part, stored, fid)
            if found is not None:
                return found
        return None

    def _kept_in(self, target: ast.expr, value: ast.expr, fid: str) -> Outliving | None:
        """Where storing `value` in `target` (no tuple) keeps a leaking value (see
        `kept_store`)."""
        closure = self.closure(value, fid)
        if not closure and not self.leaks(value, fid, raising=False):
            return None
        found = self._kept_target(target, fid)
        return replace(found, closure=True) if found is not None and closure else found

    def _kept_target(self, target: ast.expr, fid: str) -> Outliving | None:
        if isinstance(target, ast.Name):
            found = self.outliving(target, fid)
            outer = found is not None and found.holder in (Holder.GLOBAL, Holder.NONLOCAL)
            return found if outer else None
        if isinstance(target, ast.Subscript):
            index = target.slice
            keys = index.elts if isinstance(index, ast.Tuple) else [index]
            if any(self.is_traced(k, fid) for k in keys if not isinstance(k, ast.Slice)):
                return None
            if not (self.is_container(target.value, fid) or self.program_state(target.value, fid)):
                return None
            return self.outliving(target.value, fid)
        if isinstance(target, ast.Attribute):
            return self.outliving(target, fid)
        return None

    def kept_call(self, call: ast.Call, fid: str) -> Outliving | None:
        """Where `call`, in the code of `fid`, puts a leaking value into a container that
        outlives the trace (`HISTORY.append(loss)`, `self.seen.add(x)`): a method of
        `SEQUENCE_METHODS` on anything, of `MAPPING_METHODS` on a known dict or set."""
        func = call.func
        if not isinstance(func, ast.Attribute):
            return None
        if self.full_name(func, fid) is not None and not self.program_state(func.value, fid):
            return None  # a module's function, not a method
        method = func.attr
        if method in SEQUENCE_METHODS:
            payloads = _arguments(call, SEQUENCE_METHODS[method])
        elif method in MAPPING_METHODS:
            payloads = _arguments(call, MAPPING_METHODS[method])
            if not self.is_container(func.value, fid):
                return None
        else:
            return None
        closure = any(self.closure(payload, fid) for payload in payloads)
        if not closure and not any(self.leaks(p, fid, raising=False) for p in payloads):
            return None
        found = self.outliving(func.value, fid)
        return replace(found, closure=True) if found is not None and closure else found

    # ----- closures ----------------------------------------------------------------------

    def closure(self, node: ast.expr, fid: str) -> bool:
        """`node`, in the code of `fid`, is a function that closes over a tracer: a lambda
        or a `def` of `fid` whose body reads a name of `fid` that is a tracer there, or a
        parameter every caller in traced code gives such a function (`expect(name, check)`
        called with `lambda: jnp.all(z > 0)`). Calling it later, outside the trace, uses the
        tracer."""
        if isinstance(node, ast.Lambda):
            return self._captures(node, fid)
        if not isinstance(node, ast.Name) or fid not in self.facts.reasons:
            return False
        bindings = self._index(fid).bindings.get(node.id, [])
        if len(bindings) != 1:
            return False
        binding = bindings[0]
        if isinstance(binding.node, ast.FunctionDef | ast.AsyncFunctionDef):
            return self._captures(binding.node, fid)
        return binding.parameter and node.id in self.closure_params().get(fid, set())

    def _captures(
        self, function: ast.Lambda | ast.FunctionDef | ast.AsyncFunctionDef, fid: str
    ) -> bool:
        inner = self.module.by_node.get(function)
        if inner is None or fid not in self.facts.reasons:
            return False
        own = self._index(inner).bindings
        body: list[ast.AST] = (
            [function.body] if isinstance(function, ast.Lambda) else list(function.body)
        )
        return any(
            isinstance(node, ast.Name)
            and isinstance(node.ctx, ast.Load)
            and node.id not in own
            and self.facts.tracer_at(node)
            for part in body
            for node in ast.walk(part)
        )

    def closure_params(self) -> dict[str, set[str]]:
        """The parameters of the module's functions that traced code gives a function closing
        over a tracer (see `closure`), by function id: every call of the function in traced
        code that gives the parameter anything gives it such a function."""
        if self._closure_params is not None:
            return self._closure_params
        self._closure_params = {}
        for _ in range(3):  # handed on through a chain of calls
            given: dict[tuple[str, str], list[bool]] = defaultdict(list)
            for summary in self.facts.traced_functions():
                for call in summary.calls:
                    callee = self.module.functions.get(call.target or "")
                    if callee is None or call.guarded:
                        continue
                    for param, arg in _given(callee.positional[call.bound :], call.node):
                        given[(callee.id, param)].append(self.closure(arg, summary.id))
            found: dict[str, set[str]] = {}
            for (callee_id, param), closures in given.items():
                if all(closures):
                    found.setdefault(callee_id, set()).add(param)
            if found == self._closure_params:
                break
            self._closure_params = found
        return self._closure_params

    # ----- objects -----------------------------------------------------------------------

    def outliving(self, node: ast.expr, fid: str) -> Outliving | None:
        """Where `node` (a name, or attributes or items of one) lives when the object outlives the
        trace: a `global` / `nonlocal` name, a module-level object (not an import, not one
        of `NOT_OURS`' objects), an attribute of a plain class's `self`, a parameter's
        container default, an object of an enclosing function that is not traced. None for
        the function's own objects and its other parameters' (the caller's)."""
        root = store_root(node)  # `HISTORY["loss"]`, `HISTORY.setdefault("loss", [])` too
        if not isinstance(root, ast.Name):
            return None
        if root is not node and not isinstance(node, ast.Attribute | ast.Subscript):
            node = _container_of(node)
        name = root.id
        own = self._index(fid)
        if name in own.global_names:
            return Outliving(Holder.GLOBAL, name)
        if name in own.nonlocal_names:
            return Outliving(Holder.NONLOCAL, name)
        scope = self._resolve(name, fid)
        bindings = self._index(scope).bindings.get(name, []) if scope is not None else []
        if not bindings or all(binding.imported for binding in bindings):
            return Outliving(Holder.MODULE, name) if self.program_state(node, fid) else None
        if self.made_by(root, fid, frozenset(), NOT_OURS):
            return None
        if scope == MODULE:
            return Outliving(Holder.MODULE, name)
        if len(bindings) != 1:
            return None
        binding = bindings[0]
        if scope == fid:
            if not binding.parameter:
                return None
            if root is not node and self.plain_self(fid, name):
                return Outliving(Holder.SELF, name)
            default = binding.value
            if default is not None and self.makes_container(default, fid):
                return Outliving(Holder.DEFAULT, name)
            return None
        if binding.parameter:
            return None  # an enclosing function's parameter: its caller's object
        enclosing = self.module.nodes.get(scope or "")
        if isinstance(enclosing, ast.FunctionDef | ast.AsyncFunctionDef) and (
            scope not in self.facts.reasons
        ):
            return Outliving(Holder.ENCLOSING, name, enclosing.name)
        return None

    def made_by(
        self,
        node: ast.expr,
        fid: str,
        makers: frozenset[str],
        prefixes: tuple[str, ...] = (),
        depth: int = 0,
    ) -> bool:
        """`node` is made by a call to one of `makers` (or, with `prefixes`, by a call of or
        on something made under them: `multiprocessing.get_context().Queue()`), directly or as
        the value of a name's every binding (of `self.name`'s, in its class's methods)."""
        if depth > MAX_DEPTH:
            return False
        if isinstance(node, ast.Call):
            name = self.full_name(node.func, fid)
            if name is not None and (name in makers or name.startswith(prefixes)):
                return True
            func = node.func
            return (
                bool(prefixes)
                and isinstance(func, ast.Attribute)
                and self.made_by(func.value, fid, makers, prefixes, depth + 1)
            )
        values = self.bound_values(node, fid)
        return bool(values) and all(
            isinstance(value, ast.Call) and self.made_by(value, fid, makers, prefixes, depth + 1)
            for value in values
        )

    def program_state(self, node: ast.expr, fid: str) -> bool:
        """`node` is an object another module of the program keeps at module level, reached
        through an import (`state.STATE`, `STATE` of `from pkg.state import STATE`): it
        outlives every trace. (A library's attributes are its code and constants.)"""
        if isinstance(node, ast.Name):
            bindings = self.bindings(node.id, fid)
            full = self.module.imports.get(node.id, "")
            imported = bool(bindings) and all(binding.imported for binding in bindings)
            return imported and "." in full and of_the_program(full)  # not `import pkg`
        return isinstance(node, ast.Attribute) and of_the_program(self.full_name(node, fid))

    def is_container(self, node: ast.expr, fid: str) -> bool:
        """`node` is a name every binding of which makes a list, dict, set, deque or queue (or
        `self.name`, every value its class gives it)."""
        values = self.bound_values(node, fid)
        return bool(values) and all(
            value is not None and self.makes_container(value, fid) for value in values
        )

    def makes_container(self, value: ast.expr, fid: str) -> bool:
        """`value` makes a new list, dict, set, deque or queue."""
        if isinstance(value, _CONTAINER_DISPLAYS):
            return True
        return isinstance(value, ast.Call) and self.full_name(value.func, fid) in CONTAINER_MAKERS

    def bound_values(self, node: ast.expr, fid: str) -> list[ast.expr | None]:
        """The value of each binding of a name; of `self.name`, what the methods of its class
        give it; none for another expression, or when a method changes it otherwise."""
        if isinstance(node, ast.Name):
            return [binding.value for binding in self.bindings(node.id, fid)]
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            return self._attribute_values(node.value.id, node.attr, fid) or []
        return []

    def _attribute_values(self, receiver: str, name: str, fid: str) -> list[ast.expr | None] | None:
        method = self.module.nodes.get(fid)
        cls = self._class_of(method) if method is not None else None
        if cls is None or method is None or _first_parameter(method) != receiver:
            return None
        found: list[ast.expr | None] = []
        for statement in cls.body:
            own = _first_parameter(statement)
            if not isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef) or own is None:
                continue
            for node in _everything(statement.body):
                if isinstance(node, ast.Assign):
                    for target in node.targets:
                        if _is_attribute(target, own, name):
                            found.append(node.value)
                        elif isinstance(target, ast.Tuple | ast.List) and any(
                            _is_attribute(_unstarred(e), own, name) for e in target.elts
                        ):
                            return None
                elif isinstance(node, ast.AnnAssign) and node.value is not None:
                    if _is_attribute(node.target, own, name):
                        found.append(node.value)
                elif isinstance(node, ast.AugAssign) and _is_attribute(node.target, own, name):
                    return None
        return found

    def plain_self(self, fid: str, name: str) -> bool:
        """`name` is `self` of the method `fid` of a plain class (no framework module: its base
        classes are `object`, `ABC` or plain classes of the module) whose instances traced code
        does not make (their attributes could die with the trace)."""
        method = self.module.nodes.get(fid)
        if not isinstance(method, ast.FunctionDef | ast.AsyncFunctionDef):
            return False
        if not method.args.args or method.args.args[0].arg != name:
            return False
        if any(
            isinstance(d, ast.Name) and d.id in ("staticmethod", "classmethod")
            for d in method.decorator_list
        ):
            return False
        cls = self._class_of(method)
        where = self.module.declared_in.get(fid, MODULE)
        return cls is not None and self._plain_class(cls, where, 0) and not self._made_traced(cls)

    def self_made_in_trace(self, fid: str, name: str) -> bool:
        """`name` is `self` of the method `fid` of a class whose instances traced code makes
        (`LabeledArray(pred)` in a jitted function): its attributes are written on an object
        of the trace, which traced code may read back."""
        method = self.module.nodes.get(fid)
        if not isinstance(method, ast.FunctionDef | ast.AsyncFunctionDef):
            return False
        if _first_parameter(method) != name:
            return False
        cls = self._class_of(method)
        return cls is not None and self._made_traced(cls)

    def _plain_class(self, cls: ast.ClassDef, fid: str, depth: int) -> bool:
        if depth > MAX_DEPTH or cls.decorator_list or cls.keywords:
            return False
        for base in cls.bases:
            if self.full_name(base, fid) in PLAIN_BASES:
                continue
            parent = self._class_named(base, fid)
            if parent is None or not self._plain_class(parent, fid, depth + 1):
                return False
        return True

    def _class_named(self, node: ast.expr, fid: str) -> ast.ClassDef | None:
        """The class a name is bound to, when it is bound only to it."""
        if not isinstance(node, ast.Name):
            return None
        bindings = self.bindings(node.id, fid)
        if len(bindings) == 1 and isinstance(bindings[0].node, ast.ClassDef):
            return bindings[0].node
        return None

    def _made_traced(self, cls: ast.ClassDef) -> bool:
        """Traced code calls the class by its name (`m = MLP(); m(x)`)."""
        return any(
            isinstance(call.node.func, ast.Name) and call.node.func.id == cls.name
            for summary in self.facts.traced_functions()
            for call in summary.calls
        )

    def _class_of(self, method: ast.AST) -> ast.ClassDef | None:
        """The class whose body defines `method`."""
        if self._classes is None:
            # Over statements only (a class is one): a tenth of the nodes `ast.walk` visits.
            self._classes = {}
            todo = list(self.module.tree.body)
            while todo:
                statement = todo.pop()
                if isinstance(statement, ast.ClassDef):
                    self._classes.update((inner, statement) for inner in statement.body)
                todo.extend(inner_statements(statement))
        return self._classes.get(method)

    # ----- names -------------------------------------------------------------------------

    def full_name(self, node: ast.expr, fid: str) -> str | None:
        """What a dotted name denotes through an import or a builtin (`jax.numpy.zeros`,
        `builtins.list`); None when its first name is bound otherwise, or not a name."""
        parts = dotted(node)
        if parts is None:
            return None
        first, rest = parts[0], parts[1:]
        bindings = self.bindings(first, fid)
        if not bindings:
            head = f"builtins.{first}" if first in _BUILTINS else None
        elif all(binding.imported for binding in bindings):
            head = self.module.imports.get(first)
        else:
            head = None
        return ".".join([head, *rest]) if head is not None else None

    def bindings(self, name: str, fid: str) -> list[Binding]:
        """The bindings of `name` where the code of `fid` reads it."""
        scope = self._resolve(name, fid)
        return self._index(scope).bindings.get(name, []) if scope is not None else []

    def parameter_owner(self, name: str, fid: str) -> str | None:
        """The function whose parameter `name` is where the code of `fid` reads it (its own
        or an enclosing function's), when that parameter is its only binding there."""
        scope = self._resolve(name, fid)
        if scope is None or scope == MODULE:
            return None
        bindings = self._index(scope).bindings.get(name, [])
        return scope if len(bindings) == 1 and bindings[0].parameter else None

    def _resolve(self, name: str, fid: str) -> str | None:
        """The function (or `MODULE`) whose bindings `name` reads in the code of `fid`."""
        current = fid
        while current != MODULE:
            index = self._index(current)
            if name in index.global_names:
                return MODULE
            if name in index.bindings and name not in index.nonlocal_names:
                return current
            current = self.module.declared_in.get(current, MODULE)
        return MODULE if name in self._index(MODULE).bindings else None

    def _index(self, fid: str) -> _ScopeIndex:
        index = self._scopes.get(fid)
        if index is None:
            index = self._scopes[fid] = self._build(fid)
        return index

    def _build(self, fid: str) -> _ScopeIndex:
        index = _ScopeIndex()
        node = self.module.tree if fid == MODULE else self.module.nodes[fid]
        if not isinstance(node, ast.Module):
            args = node.args
            positional = [*args.posonlyargs, *args.args]
            defaults = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
            for arg, default in zip(positional, defaults, strict=True):
                index.bindings[arg.arg].append(Binding(default, parameter=True))
            for arg, default in zip(args.kwonlyargs, args.kw_defaults, strict=True):
                index.bindings[arg.arg].append(Binding(default, parameter=True))
            for star in (args.vararg, args.kwarg):
                if star is not None:
                    index.bindings[star.arg].append(Binding(parameter=True))
        body = [node.body] if isinstance(node, ast.Lambda) else node.body
        _collect(body, index)
        if fid == MODULE:  # functions that declare a name `global` bind it here too
            for other, scope in self.module.scopes.items():
                if other == MODULE or not scope.declared or other not in self.module.nodes:
                    continue
                for name in self._index(other).global_names:
                    index.bindings[name].extend(self._index(other).bindings.get(name, []))
        return index


def _collect(body: list[ast.stmt] | list[ast.expr], index: _ScopeIndex) -> None:
    """The bindings of a scope's own code (not of nested functions, classes or
    comprehensions, which have scopes of their own)."""
    todo: list[ast.AST] = list(body)
    bindings = index.bindings
    while todo:
        node = todo.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            bindings[node.name].append(Binding(node=node))
            todo.extend(node.decorator_list)
            if isinstance(node, ast.ClassDef):
                todo.extend([*node.bases, *(k.value for k in node.keywords)])
            else:
                todo.extend([*node.args.defaults, *(d for d in node.args.kw_defaults if d)])
            continue
        if isinstance(node, ast.Lambda):
            todo.extend([*node.args.defaults, *(d for d in node.args.kw_defaults if d)])
            continue
        if isinstance(node, _COMPREHENSIONS):
            todo.append(node.generators[0].iter)  # evaluated in the enclosing scope
            continue
        if isinstance(node, ast.Assign):
            for target in node.targets:
                _bind(target, node.value, bindings)
        elif isinstance(node, ast.AnnAssign):
            _bind(node.target, node.value, bindings)
        elif isinstance(node, ast.AugAssign | ast.For | ast.AsyncFor):
            _bind(node.target, None, bindings)
        elif isinstance(node, ast.withitem) and node.optional_vars is not None:
            _bind(node.optional_vars, None, bindings)
        elif isinstance(node, ast.NamedExpr):
            _bind(node.target, None, bindings)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bindings[node.name].append(Binding())
        elif isinstance(node, ast.Import | ast.ImportFrom):
            for alias in node.names:
                if alias.name != "*":
                    bound = alias.asname or alias.name.split(".", 1)[0]
                    bindings[bound].append(Binding(imported=True))
        elif isinstance(node, ast.Global):
            index.global_names.update(node.names)
        elif isinstance(node, ast.Nonlocal):
            index.nonlocal_names.update(node.names)
        elif isinstance(node, ast.MatchAs | ast.MatchStar) and node.name:
            bindings[node.name].append(Binding())
        elif isinstance(node, ast.MatchMapping) and node.rest:
            bindings[node.rest].append(Binding())
        todo.extend(children(node))


def _bind(target: ast.expr, value: ast.expr | None, bindings: dict[str, list[Binding]]) -> None:
    if isinstance(target, ast.Name):
        bindings[target.id].append(Binding(value))
    elif isinstance(target, ast.Tuple | ast.List):
        for element in target.elts:
            _bind(_unstarred(element), None, bindings)


def store_root(node: ast.expr) -> ast.expr:
    """What a store into `node` stores into at bottom: `a` of `a`, `a.b.c`, `a["k"].b` and
    `a.setdefault(k, [])` (an item the dict keeps, handed back); a call otherwise."""
    while True:
        if isinstance(node, ast.Attribute | ast.Subscript):
            node = node.value
        elif _item_of(node):
            node = _container_of(node)
        else:
            return node


def _item_of(node: ast.expr) -> bool:
    """`d.setdefault(k, [])`: an item the dict `d` keeps, handed back."""
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "setdefault"
    )


def _container_of(node: ast.expr) -> ast.expr:
    """The object whose item a `setdefault` call hands back (`d` of `d.setdefault(k, [])`)."""
    while _item_of(node):
        assert isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
        node = node.func.value
    return node


def _given(positional: list[str], call: ast.Call) -> Iterator[tuple[str, ast.expr]]:
    """Each parameter `call` gives a value by position (up to a starred argument) or by
    keyword, with the argument."""
    for param, arg in zip(positional, call.args, strict=False):
        if isinstance(arg, ast.Starred):
            break
        yield param, arg
    for keyword in call.keywords:
        if keyword.arg is not None:
            yield keyword.arg, keyword.value


def _unpacked(target: ast.expr, value: ast.expr) -> Iterator[tuple[ast.expr, ast.expr]]:
    """Each target an assignment stores into, with the expression whose value (or a part of
    it) it gets: `key, sub = random.split(key)` gives each of `key` and `sub` a row of the
    split; `a, b = x, y` gives `a` `x`. A starred target is left out."""
    if not isinstance(target, ast.Tuple | ast.List):
        yield target, value
        return
    pairs = isinstance(value, ast.Tuple | ast.List) and len(value.elts) == len(target.elts)
    for index, element in enumerate(target.elts):
        if isinstance(element, ast.Starred):
            continue
        if pairs:
            assert isinstance(value, ast.Tuple | ast.List)
            part = value.elts[index]
            if isinstance(part, ast.Starred):
                return
            yield from _unpacked(element, part)
        else:
            yield from _unpacked(element, value)


def _everything(body: list[ast.stmt]) -> Iterator[ast.AST]:
    """Every node under the statements of `body`, nested functions' too."""
    for statement in body:
        yield from ast.walk(statement)


def _operands(node: ast.expr) -> Iterator[ast.expr]:
    """The operands and elements of an expression."""
    for child in children(node):
        if isinstance(child, ast.expr):
            yield child
        elif isinstance(child, ast.keyword):
            yield child.value


def _arguments(call: ast.Call, position: int | None) -> list[ast.expr]:
    """The positional argument at `position` (every argument when None)."""
    if position is None:
        return [*map(_unstarred, call.args), *(k.value for k in call.keywords)]
    positional = [arg for arg in call.args if not isinstance(arg, ast.Starred)]
    return [positional[position]] if len(positional) > position else []


def _unstarred(node: ast.expr) -> ast.expr:
    return node.value if isinstance(node, ast.Starred) else node


def _is_attribute(target: ast.expr, receiver: str, name: str) -> bool:
    return (
        isinstance(target, ast.Attribute)
        and target.attr == name
        and isinstance(target.value, ast.Name)
        and target.value.id == receiver
    )


def _first_parameter(function: ast.AST) -> str | None:
    if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
        return None
    positional = [*function.args.posonlyargs, *function.args.args]
    return positional[0].arg if positional else None
