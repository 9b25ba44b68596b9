"""Tracing across the modules of a run: a function imported from another module of the project
and called from traced code is traced too.

Each file is analysed alone, as before; its analysis also lists the calls its traced code makes
into the run's packages (`TracedCall`). The batch then resolves those calls to the functions of
the run's files (following `__init__` re-exports) and analyses the called files again with the
functions that other modules trace (`Entry`), round after round until nothing new is traced.
Plain values only (no LibCST): they travel between processes and into the cache.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import os
from collections import defaultdict
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jaxfix.analysis.external import KEYWORDS, External
from jaxfix.models.parts import Outline
from jaxfix.models.transforms import Wrapped

if TYPE_CHECKING:
    from jaxfix.analysis.file import FileAnalysis

MAX_REEXPORTS = 5  # `from .a import f` hops followed to the definition


# A top-level function of a module that another module's traced code calls, with what it is
# given: the analysis enters the function with it as it is (`jaxfix.analysis.tracing`).
Entry = External


@dataclass(frozen=True)
class TracedCall:
    """A call from traced code to a function imported from the project, as an `Entry` of the
    module that defines it (`target` is its absolute dotted name: `pkg.io.save`)."""

    target: str
    entry: Entry


# The details of a `ReturnChange` that asks the modules calling a function to wait for the
# host callbacks it runs before they read what those write (the keys, as plain values), and
# the fix those callbacks are part of (`ReturnChange.transaction`).
WAITS = "waits"
ORIGIN = "origin"


@dataclass(frozen=True)
class ReturnChange:
    """A function of a module whose return a rule's fix changes, so that its calls in the other
    modules of the run must change with it (JF107 makes it return the array instead of its
    serialization; JF101 and JF103 make it also return what its host statements need, which
    then run after each call). `details` is the rule's own description of the change, as plain
    values (they travel between processes and into the cache): only the rule `rule` reads
    them; the run matches the function to its callers and says whether they can all change."""

    function: str
    rule: str  # the code of the rule whose fix it is
    details: tuple[tuple[str, Any], ...]
    why_not: str = ""  # why the function itself cannot be rewritten ("" when it can)
    # The function returns what it did: its callers only add code after the calls (the
    # barriers before reads of what its host callbacks write), so a re-export is no obstacle.
    keeps_return: bool = False

    def detail(self, name: str) -> Any:
        return dict(self.details)[name]

    def transaction(self, definer: str) -> str:
        """The fix this change is part of, as `module:function` (`definer`: the module that
        told it): its own function's, or for a function that runs another's host callbacks
        (`WAITS`), that other's (`ORIGIN`)."""
        origin = str(dict(self.details).get(ORIGIN, f":{self.function}"))
        return f"{definer}{origin}" if origin.startswith(":") else origin

    @classmethod
    def from_plain(cls, data: dict[str, Any]) -> ReturnChange:
        details = tuple((str(name), _frozen(value)) for name, value in data["details"])
        return cls(data["function"], data["rule"], details, data["why_not"], data["keeps_return"])


def _frozen(value: Any) -> Any:
    """A JSON value with its lists as tuples, as the change was made (it must hash)."""
    return tuple(_frozen(item) for item in value) if isinstance(value, list) else value


@dataclass(frozen=True)
class ChangedImport:
    """For a caller: a name it imports (as it imports it: `.enc.encode`) whose function will
    return something else (`returned`); `allowed` when every call site of the run may be
    rewritten. `definer`: the defining module's name."""

    name: str
    returned: ReturnChange
    allowed: bool = False
    definer: str = ""


@dataclass(frozen=True)
class ForeignCalls:
    """For the module defining a `ReturnChange`: whether other modules' calls of the function
    can all be rewritten, or why not."""

    function: str
    why_not: str = ""
    keeps_return: bool = False  # of the `ReturnChange` it answers


@dataclass
class ModuleFacts:
    """What the analysis of one file tells the run about it (plain values, for the cache).

    The cheap facts come from CPython's tree: its top level for every file of a run over
    packages, the rest for every file that names a package of the run; `calls_out` comes from
    the analysis (every call its traced code makes into the run's packages)."""

    # The functions defined at the top level, and the names imported there from elsewhere
    # (name -> `module.name` as written, relative or not): where another module's call lands.
    functions: set[str] = field(default_factory=set)
    reexports: dict[str, str] = field(default_factory=dict)
    # Top-level functions that call (or are decorated with) one of the selected rules' anchors.
    anchored: set[str] = field(default_factory=set)
    # (top-level function, absolute target) for each call into the run's packages.
    calls: set[tuple[str, str]] = field(default_factory=set)
    # Top-level functions that return a transform applied to their argument (decorators that
    # trace) with what each does to what it wraps, and the names imported from the run that
    # decorate functions or are called on one (as imported).
    wrappers: dict[str, Wrapped] = field(default_factory=dict)
    decorators: set[str] = field(default_factory=set)
    calls_out: list[TracedCall] = field(default_factory=list)
    # (as imported, absolute) for each name or module imported from the run's packages.
    imported: set[tuple[str, str]] = field(default_factory=set)
    # Functions whose return a rule's fix changes, and for the names imported with
    # `ChangedImport`s, whether every call site here can be rewritten ("" or why not).
    return_changes: list[ReturnChange] = field(default_factory=list)
    call_sites: dict[str, str] = field(default_factory=dict)
    # The file's outline, for a later round to analyse only a part of it (`jaxfix.models.parts`);
    # `partial`: these are the facts of such a part (its `calls_out` add to the first round's).
    outline: Outline | None = None
    partial: bool = False
    # The top-level classes that declare pytree metadata fields, with their names: static
    # attributes of an instance of the class in every module of the run.
    static_classes: dict[str, list[str]] = field(default_factory=dict)
    # The full names (through the module's imports) it may use a class by (annotations,
    # calls): where the static fields of another module's class can change its results.
    class_uses: set[str] = field(default_factory=set)
    # Every name its analysis looked up among such classes of other modules
    # (`Module.static_queries`): given none of them, it is analysed again to the same outcome.
    static_queries: set[str] = field(default_factory=set)

    def forget_since(self, published: int) -> None:
        """Forget the return changes published after the first `published` (a rules' run
        given up)."""
        del self.return_changes[published:]

    def plain(self) -> dict[str, Any]:
        """As JSON values, for the cache."""
        data = asdict(self)
        for name in _SETS:
            data[name] = sorted(data[name])
        data["outline"] = self.outline.plain() if self.outline is not None else None
        return data

    @staticmethod
    def told(plain: dict[str, Any]) -> dict[str, Any]:
        """Of these facts as plain values, what the file tells the other files of the run: not
        its outline, which only its own later rounds read (an edit that moves lines tells the
        run nothing new)."""
        return {name: value for name, value in plain.items() if name != "outline"}

    @classmethod
    def from_plain(cls, data: dict[str, Any]) -> ModuleFacts:
        return cls(
            functions=set(data["functions"]),
            reexports=dict(data["reexports"]),
            anchored=set(data["anchored"]),
            calls={(a, b) for a, b in data["calls"]},
            wrappers={name: Wrapped.from_plain(w) for name, w in data["wrappers"].items()},
            decorators=set(data["decorators"]),
            calls_out=[
                TracedCall(c["target"], entry_from_plain(c["entry"])) for c in data["calls_out"]
            ],
            imported={(a, b) for a, b in data["imported"]},
            return_changes=[ReturnChange.from_plain(r) for r in data["return_changes"]],
            call_sites=dict(data["call_sites"]),
            outline=Outline.from_plain(data["outline"]) if data["outline"] is not None else None,
            partial=bool(data["partial"]),
            static_classes={
                str(name): [str(f) for f in fields]
                for name, fields in data.get("static_classes", {}).items()
            },
            class_uses=set(data.get("class_uses", ())),
            static_queries=set(data.get("static_queries", ())),
        )


_SETS = (
    "class_uses",
    "static_queries",
    "functions",
    "anchored",
    "calls",
    "decorators",
    "imported",
)


def answers_alike(queries: Iterable[str], static_classes: Mapping[str, Collection[str]]) -> bool:
    """Whether `static_classes` answer each of `queries` (`Module.static_queries`) as no
    static classes do: no class is there, or its fields there lack the name asked about."""
    for query in queries:
        name, _, asked = query.partition(" ")
        fields = static_classes.get(name)
        if fields is not None and (not asked or asked in fields):
            return False
    return True


def with_tree_facts(facts: ModuleFacts, first: ModuleFacts) -> ModuleFacts:
    """`facts` of a later round across modules, with what `jaxfix.run.engine` notes of the file's
    tree in its first round only (the same tree: the same facts); the facts of a part of the
    file (`partial`) add its traced calls to the first round's."""
    calls_out = facts.calls_out
    if facts.partial:
        known = set(first.calls_out)
        calls_out = [*first.calls_out, *(call for call in facts.calls_out if call not in known)]
    return replace(
        facts,
        functions=set(first.functions),
        reexports=dict(first.reexports),
        calls_out=calls_out,
        outline=first.outline,
        partial=False,
        anchored=set(first.anchored),
        calls=set(first.calls),
        wrappers=dict(first.wrappers),
        decorators=set(first.decorators),
        imported=set(first.imported),
        static_classes=dict(first.static_classes),
        class_uses=set(first.class_uses),
    )


def note_top_level(tree: ast.Module, facts: ModuleFacts) -> None:
    """Note the functions `tree` defines at its top level and the names it imports there."""
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            facts.functions.add(node.name)
        elif isinstance(node, ast.ImportFrom):
            module = "." * node.level + (node.module or "")
            joiner = "" if module.endswith(".") or not module else "."
            for alias in node.names:
                facts.reexports[alias.asname or alias.name] = f"{module}{joiner}{alias.name}"


def entry_from_plain(data: dict[str, Any]) -> Entry:
    """An `Entry` from `dataclasses.asdict`'s plain values (the cache's)."""
    return Entry(
        data["function"],
        tuple(data["positions"]),
        tuple(data["keywords"]),
        data["rest_from"],
        bool(data["staged"]),
        data["reason"],
        tuple(data.get("static_positions", ())),
        tuple(data.get("static_keywords", ())),
        bool(data.get("required_only", False)),
        tuple(data.get("reordering_positions", ())),
        tuple(data.get("reordering_keywords", ())),
        tuple(data.get("not_none_positions", ())),
        tuple(data.get("not_none_keywords", ())),
    )


@dataclass(frozen=True)
class ProjectContext:
    """What the rules of one file learn of the rest of the run, and where they note what the
    run learns of it (`facts`, None when nobody listens)."""

    in_run: bool = False  # analysed as part of a run over a project (not alone)
    changed_imports: tuple[ChangedImport, ...] = ()
    foreign_calls: tuple[ForeignCalls, ...] = ()
    facts: ModuleFacts | None = None


@dataclass(frozen=True)
class Place:
    """Where a module sits: its dotted name, and the package its relative imports start from."""

    module: str
    package: str

    def absolute(self, name: str) -> str:
        """`name` as an import gives it (`.io.save`, `..util.f`, `pkg.io.save`), made absolute."""
        level = len(name) - len(name.lstrip("."))
        if not level:
            return name
        parts = self.package.split(".") if self.package else []
        base = parts[: len(parts) - (level - 1)] if level - 1 <= len(parts) else []
        rest = name[level:]
        return ".".join([*base, rest] if rest else base)


@functools.lru_cache(maxsize=4096)
def _package_at(folder: str) -> str:
    """The dotted name of the package a folder is, by the `__init__.py` files of it and the
    folders above it ("" when it is none)."""
    if not os.path.isfile(os.path.join(folder, "__init__.py")):
        return ""
    parent, name = os.path.split(folder)
    above = _package_at(parent) if parent != folder else ""
    return f"{above}.{name}" if above else name


def place_of(path: Path) -> Place:
    """The module a file is, judged by the `__init__.py` files of the folders above it."""
    folder, name = os.path.split(os.path.abspath(path))
    package = _package_at(folder)
    if name == "__init__.py":
        return Place(package, package)
    stem = os.path.splitext(name)[0]
    return Place(f"{package}.{stem}" if package else stem, package)


def packages_of(places: Iterable[Place]) -> tuple[str, ...]:
    """The top-level names of the modules of the run: a call into one of them may reach a
    file of the run."""
    return tuple(sorted({place.module.split(".")[0] for place in places} - {""}))


class ProjectIndex:
    """The run's files by module name, and where each function they define is (from each
    file's facts: nothing is read again)."""

    def __init__(self, places: Mapping[Path, Place], facts: Mapping[Path, ModuleFacts]) -> None:
        self.places = places
        self._facts = facts  # only their top level is read: the same in every round
        self._paths: dict[str, Path] = {}
        for path, place in places.items():
            self._paths.setdefault(place.module, path)
        self._found: dict[str, tuple[Path, str] | None] = {}

    def definition(self, target: str) -> tuple[Path, str] | None:
        """The file of the run that defines `target` (`pkg.io.save`) at its top level, and the
        function's name there; through `from .io import save` re-exports too."""
        if target not in self._found:
            self._found[target] = self._definition(target, 0)
        return self._found[target]

    def _definition(
        self, target: str, hops: int, defines: Callable[[ModuleFacts, str], bool] | None = None
    ) -> tuple[Path, str] | None:
        module, _, name = target.rpartition(".")
        path = self._paths.get(module)
        if path is None or not name:
            return None
        facts = self._facts.get(path) or ModuleFacts()
        if defines(facts, name) if defines is not None else name in facts.functions:
            return path, name
        origin = facts.reexports.get(name)
        if origin is None or hops >= MAX_REEXPORTS:
            return None
        return self._definition(self.places[path].absolute(origin), hops + 1, defines)

    def static_fields(self, target: str) -> tuple[str, ...]:
        """The metadata fields of the class `target` (`pkg.base.System`) of the run, through
        re-exports too; none for anything else."""
        found = self._definition(target, 0, lambda facts, name: name in facts.static_classes)
        if found is None:
            return ()
        return tuple(self._facts[found[0]].static_classes[found[1]])

    def imported_static_classes(
        self, facts: ModuleFacts
    ) -> tuple[tuple[str, tuple[str, ...]], ...]:
        """The classes of the run with metadata fields that a file (with these `facts`)
        imports, by name or through their module (`base.System`), as it names them, with
        their fields."""
        found: dict[str, tuple[str, ...]] = {}
        for raw, absolute in sorted(facts.imported):
            fields = self.static_fields(absolute)
            if fields:
                found[raw] = fields
            path = self._paths.get(absolute)  # a module of the run
            module = self._facts.get(path) if path is not None else None
            for name, names in (module.static_classes if module is not None else {}).items():
                found[f"{raw}.{name}"] = tuple(names)
        return tuple(sorted(found.items()))

    def wrapped_by_project(
        self, path: Path, facts: ModuleFacts, wrappers: Mapping[tuple[Path, str], Wrapped]
    ) -> tuple[tuple[str, Wrapped], ...]:
        """The decorators of the file at `path` (as it imports them) that are wrappers of the
        run, with what each does: transforms for that file."""
        place = self.places[path]
        found = []
        for raw in sorted(facts.decorators):
            definition = self.definition(place.absolute(raw))
            if definition is not None and definition in wrappers:
                found.append((raw, wrappers[definition]))
        return tuple(found)

    def reaching_anchors(self, facts: Mapping[Path, ModuleFacts]) -> set[tuple[Path, str]]:
        """The functions that call an anchor of a rule, themselves or through functions of
        the run they call: only calls to these can make a finding elsewhere."""
        callers: dict[tuple[Path, str], list[tuple[Path, str]]] = defaultdict(list)
        for path, fact in facts.items():
            for name, target in fact.calls:
                found = self.definition(target)
                if found is not None:
                    callers[found].append((path, name))
        reached = {(path, name) for path, fact in facts.items() for name in fact.anchored}
        todo = list(reached)
        while todo:  # up the call graph, each function once
            for caller in callers.get(todo.pop(), ()):
                if caller not in reached:
                    reached.add(caller)
                    todo.append(caller)
        return reached

    def entries(self, calls: Iterable[TracedCall]) -> dict[Path, tuple[Entry, ...]]:
        """The entries of each file that `calls` reach, merged per function."""
        merged: dict[Path, dict[str, Entry]] = defaultdict(dict)
        for call in calls:
            found = self.definition(call.target)
            if found is None:
                continue
            path, name = found
            old = merged[path].get(name)
            merged[path][name] = _merge(old, call.entry, name)
        return {
            path: tuple(by_name[name] for name in sorted(by_name))
            for path, by_name in merged.items()
        }


def _merge(old: Entry | None, new: Entry, name: str) -> Entry:
    if old is None:
        return dataclasses.replace(new, function=name)
    return Entry(
        name,
        tuple(sorted({*old.positions, *new.positions})),
        tuple(sorted({*old.keywords, *new.keywords})),
        _earliest(old.rest_from, new.rest_from),
        old.staged or new.staged,
        min(old.reason, new.reason),  # the same one, whatever the order of the files
        tuple(sorted({*old.static_positions, *new.static_positions})),
        tuple(sorted({*old.static_keywords, *new.static_keywords})),
        _required_only(old, new),
        tuple(sorted({*old.reordering_positions, *new.reordering_positions})),
        tuple(sorted({*old.reordering_keywords, *new.reordering_keywords})),
        # Not None only where every call says so: the merged entry stands for them all.
        tuple(sorted({*old.not_none_positions} & {*new.not_none_positions})),
        tuple(sorted({*old.not_none_keywords} & {*new.not_none_keywords})),
    )


def _required_only(*entries: Entry) -> bool:
    """Whether the merged entry fills only the parameters without a default: when one of
    `entries` asks for that and none fills them all."""
    filling = [e for e in entries if e.rest_from is not None or KEYWORDS in e.keywords]
    return any(e.required_only for e in entries) and all(e.required_only for e in filling)


def _earliest(a: int | None, b: int | None) -> int | None:
    return b if a is None else a if b is None else min(a, b)


def traced_calls(
    analysed: FileAnalysis, place: Place, packages: Collection[str]
) -> list[TracedCall]:
    """The calls the file's traced code makes into the run's `packages` (by absolute name),
    with which of their parameters receive traced values and which Python values, and the
    transforms it applies to functions imported from them (`jax.grad(loss)`): the other
    modules' entries, once the run knows which of these functions reach a rule's anchor."""
    found: list[TracedCall] = []

    def in_run(name: str) -> str | None:
        target = place.absolute(name)
        return target if target.split(".")[0] in packages else None

    def where(label: str) -> str:
        return ".".join(part for part in (place.module, label) if part)

    for name, call, label, staged in analysed.calls_out():
        if (target := in_run(name)) is None:
            continue
        positions, keywords, rest_from = analysed.traced_arguments(call)
        static_positions, static_keywords = analysed.static_arguments(call)
        reordering_positions, reordering_keywords = analysed.reordering_arguments(call)
        not_none_positions, not_none_keywords = analysed.not_none_arguments(call)
        entry = Entry(
            "",
            tuple(positions),
            tuple(keywords),
            rest_from,
            staged,
            f"called from traced `{where(label)}`",
            tuple(static_positions),
            tuple(static_keywords),
            reordering_positions=tuple(reordering_positions),
            reordering_keywords=tuple(reordering_keywords),
            not_none_positions=tuple(not_none_positions),
            not_none_keywords=tuple(not_none_keywords),
        )
        found.append(TracedCall(target, entry))
    for name, entry, transform, label in analysed.transformed_imports():
        if (target := in_run(name)) is not None:
            reason = f"passed to `{transform}` in `{where(label)}`"
            found.append(TracedCall(target, replace(entry, reason=reason)))
    return found
