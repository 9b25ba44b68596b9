"""A Hypothesis strategy for JAX-shaped programs: source text built from small templates.

Each program is a module of imports (under random aliases), module state, helpers, traced
functions and host code. Traced functions are made of random compositions of what jaxfix's rules
look for: serializing a traced value (`pickle`, `cloudpickle`, `dill`, `joblib`, `np.save`,
`json`, `.tobytes()`) as an expression statement, into a global, an attribute, an item or a list,
inside `with open(...)` blocks, in returns and in lambdas given to `tree_map`; and caches
(`functools`, `cachetools`, `joblib.Memory`, `diskcache`) on jitted functions and helpers. They
are traced through decorators and call sites (`jit`, `partial(jit, static_argnames=...)`, `vmap`,
`grad`, `lax.scan`, `fori_loop`, `while_loop`, `cond`, `pmap`, `checkpoint`), call helpers and
nested functions with traced arguments, and sit beside look-alikes: shadowed names, static
arguments, host-side serialization and host callbacks.

The programs are never run: they only need to parse and compile, which `jax_programs()` checks.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from hypothesis import strategies as st
from hypothesis.strategies import DrawFn

T = TypeVar("T")
Lines = list[str]

STATIC_NAMES = ("tag", "n", "path", "mode")
TRACED_NAMES = ("x", "w", "params", "state", "batch", "h")
LOCAL_BASES = ("y", "z", "out", "acc", "loss", "act", "g")


def indent(lines: Sequence[str], level: int = 1) -> Lines:
    pad = "    " * level
    return [pad + line if line.strip() else "" for line in lines]


@dataclass
class Aliases:
    """How this program spells each library: the import lines and the names they bind."""

    imports: Lines
    jax: str | None  # a name bound to the jax module, if any
    jit: str
    lax: str
    vmap: str
    grad: str
    tree_map: str
    partial: str
    jnp: str
    np: str
    pickles: Lines  # modules with dumps/dump: pickle, cloudpickle, dill (maybe aliased)
    dumps: str | None  # `from pickle import dumps [as ...]`
    libs: set[str]  # optional modules imported: joblib, json, marshal, torch, gzip, io
    caches: Lines  # cache decorators (without the @)
    setup: Lines  # module-level objects the caches need
    lookalike_cache: str | None  # a project-local decorator with a cache-like name


@st.composite
def aliases(draw: DrawFn) -> Aliases:
    imports: Lines = []
    jax_style = draw(st.sampled_from(["jax", "J", None]))
    if jax_style == "jax":
        imports.append("import jax")
    elif jax_style == "J":
        imports.append("import jax as J")
    from_jax: Lines = []

    def from_jax_name(attr: str, alias: str) -> str:
        options = ["module", "from", "as"] if jax_style else ["from", "as"]
        style = draw(st.sampled_from(options))
        if style == "module":
            return f"{jax_style}.{attr}"
        if style == "from":
            from_jax.append(attr)
            return attr
        from_jax.append(f"{attr} as {alias}")
        return alias

    jit = from_jax_name("jit", "compile_step")
    lax = from_jax_name("lax", "L")
    vmap = from_jax_name("vmap", "batched")
    grad = from_jax_name("grad", "derivative")
    tree_styles = ["from_tree_util", "tree_util_module"]
    if jax_style:
        tree_styles += ["jax.tree_util", "jax.tree"]
    tree_style = draw(st.sampled_from(tree_styles))
    if tree_style == "from_tree_util":
        imports.append("from jax.tree_util import tree_map")
        tree_map = "tree_map"
    elif tree_style == "tree_util_module":
        from_jax.append("tree_util")
        tree_map = "tree_util.tree_map"
    elif tree_style == "jax.tree_util":
        tree_map = f"{jax_style}.tree_util.tree_map"
    else:
        tree_map = f"{jax_style}.tree.map"
    if from_jax:
        if draw(st.booleans()):
            imports.append(f"from jax import {', '.join(from_jax)}")
        else:
            imports.extend(f"from jax import {name}" for name in from_jax)

    jnp_import, jnp = draw(
        st.sampled_from(
            [
                ("import jax.numpy as jnp", "jnp"),
                ("from jax import numpy as jnp", "jnp"),
                ("import jax.numpy as jx", "jx"),
                ("import jax.numpy", "jax.numpy"),  # binds `jax` too
                ("import numpy as jnp  # numpy, not jax.numpy", "jnp"),  # a look-alike
            ]
        )
    )
    imports.append(jnp_import)
    np_import, np = draw(
        st.sampled_from(
            [
                ("import numpy as np", "np"),
                ("import numpy", "numpy"),
                ("import numpy as onp", "onp"),
            ]
        )
    )
    imports.append(np_import)

    pickle_options = [
        ("import pickle", "pickle"),
        ("import pickle as pk", "pk"),
        ("import cloudpickle", "cloudpickle"),
        ("import cloudpickle as cp", "cp"),
        ("import dill", "dill"),
    ]
    chosen = [draw(st.sampled_from(pickle_options))]
    if draw(st.integers(0, 3)) == 0:
        chosen = draw(
            st.lists(st.sampled_from(pickle_options), min_size=2, max_size=2, unique=True)
        )
    imports.extend(line for line, _ in chosen)
    pickles = [name for _, name in chosen]
    dumps_import = draw(
        st.sampled_from(
            [
                None,
                ("from pickle import dumps", "dumps"),
                ("from cloudpickle import dumps as cp_dumps", "cp_dumps"),
            ]
        )
    )
    dumps = None
    if dumps_import is not None:
        imports.append(dumps_import[0])
        dumps = dumps_import[1]
    all_libs = ["joblib", "json", "marshal", "torch", "gzip", "io"]
    libs = set(draw(st.sets(st.sampled_from(all_libs), max_size=2)))

    functools_style = draw(st.sampled_from(["functools", "ft", "from"]))
    if functools_style == "from":
        imported = draw(
            st.lists(
                st.sampled_from(["cache", "lru_cache", "partial"]),
                min_size=1,
                max_size=3,
                unique=True,
            )
        )
        imports.append(f"from functools import {', '.join(sorted(imported))}")
        module = None
        if len(imported) < 3:
            module = draw(st.sampled_from(["functools", "ft"]))
            imports.append(
                "import functools" if module == "functools" else "import functools as ft"
            )
    else:
        imported = []
        module = functools_style
        imports.append("import functools" if module == "functools" else "import functools as ft")

    def functools_name(attr: str) -> str:
        return attr if attr in imported else f"{module}.{attr}"

    partial = functools_name("partial")
    lru, cache = functools_name("lru_cache"), functools_name("cache")
    caches = [lru, f"{lru}(maxsize=None)", f"{lru}(maxsize=16)", cache]
    setup: Lines = []
    if draw(st.integers(0, 2)) == 0:
        imports.append("import cachetools")
        imports.append("import cachetools.func")
        caches += [
            "cachetools.cached(cachetools.LRUCache(maxsize=8))",
            "cachetools.cached(cache={})",
            "cachetools.func.lru_cache(maxsize=32)",
            "cachetools.func.ttl_cache()",
        ]
    if "joblib" in libs and draw(st.booleans()):
        setup.append('memory = joblib.Memory("cachedir", verbose=0)')
        caches += ["memory.cache", "memory.cache()"]
    if draw(st.integers(0, 3)) == 0:
        imports.append("import diskcache")
        setup.append('dcache = diskcache.Cache("dc")')
        caches.append("dcache.memoize()")
    lookalike_cache = None
    if "lru_cache" not in imported and draw(st.integers(0, 4)) == 0:
        lookalike_cache = "lru_cache"
    imports.extend(sorted(f"import {lib}" for lib in libs))
    imports = draw(st.permutations(imports))
    return Aliases(
        imports=list(imports),
        jax=jax_style or ("jax" if jnp == "jax.numpy" else None),
        jit=jit,
        lax=lax,
        vmap=vmap,
        grad=grad,
        tree_map=tree_map,
        partial=partial,
        jnp=jnp,
        np=np,
        pickles=pickles,
        dumps=dumps,
        libs=libs,
        caches=caches,
        setup=setup,
        lookalike_cache=lookalike_cache,
    )


@dataclass
class Scope:
    """What a function body being generated can use."""

    traced: Lines  # names holding (possibly) traced values
    static: Lines  # names holding static Python values
    depth: int = 0
    globals: Lines = field(default_factory=list)  # names to declare `global` at the top
    nonlocals: Lines = field(default_factory=list)  # names to declare `nonlocal`
    outer_locals: Lines = field(default_factory=list)  # enclosing locals nonlocal may rebind
    files: Lines = field(default_factory=list)  # names bound by an enclosing `with ... as`

    def child(self) -> Scope:
        return Scope(
            list(self.traced),
            list(self.static),
            self.depth + 1,
            self.globals,
            self.nonlocals,
            self.outer_locals,
            list(self.files),
        )


class _Builder:
    """Generates one program, drawing every choice from Hypothesis."""

    def __init__(self, draw: DrawFn, names: Aliases) -> None:
        self.draw = draw
        self.n = names
        self.prelude: dict[str, None] = {}  # module-level definitions, deduplicated
        self.counter = 0
        self.helpers: list[tuple[str, int]] = []  # name and arity of module-level helpers
        self.driver: Lines = []  # module-level host code that calls the units

    # ----- choices ----------------------------------------------------------------------

    def pick(self, options: Sequence[T]) -> T:
        return self.draw(st.sampled_from(options))

    def chance(self, one_in: int) -> bool:
        return self.draw(st.integers(0, one_in - 1)) == 0

    def fresh(self, base: str) -> str:
        self.counter += 1
        return f"{base}{self.counter}"

    def need(self, *definition: str) -> None:
        self.prelude["\n".join(definition)] = None

    # ----- expressions ------------------------------------------------------------------

    def traced_expr(self, scope: Scope) -> str:
        if not scope.traced:
            return f"{self.n.jnp}.zeros(3)"
        a, b = self.pick(scope.traced), self.pick(scope.traced)
        jnp = self.n.jnp
        return self.pick(
            [
                f"{a} * 2.0",
                f"{a} + {b}",
                f"{jnp}.tanh({a})",
                f"{jnp}.sum({a} ** 2)",
                f"{a}.mean()",
                f"{a}[0]",
                f"-{a}",
                f"{jnp}.where({a} > 0, {a}, 0.0)",
                f"{a} / ({b} + 1e-6)",
                f"{jnp}.cumsum({a})",
            ]
        )

    def static_expr(self, scope: Scope) -> str:
        options = ['"label"', "3", "(1, 2)"]
        options += [f"{a}.shape" for a in scope.traced] + [f"len({a})" for a in scope.traced]
        options += list(scope.static)
        return self.pick(options)

    def payload(self, scope: Scope) -> str:
        if scope.traced and not self.chance(5):
            a = self.pick(scope.traced)
            b = self.pick(scope.traced)
            return self.pick(
                [a, a, a, f"{a} * 2", f"[{a}, {b}]", f'{{"a": {a}}}', f"({a}, {b})", f"{a}.T"]
            )
        return self.static_expr(scope)

    def serialize(self, scope: Scope, payload: str | None = None) -> str:
        """A call that serializes `payload` (a traced value unless the draw says otherwise)."""
        p = payload if payload is not None else self.payload(scope)
        q = self.payload(scope)
        n = self.n
        templates = []
        for pk in n.pickles:
            templates += [f"{pk}.dumps({{p}})", f"{pk}.dumps({{p}}, protocol=4)"]
            templates.append(f"{pk}.dumps(obj={{p}})")
        if n.dumps:
            templates.append(f"{n.dumps}({{p}})")
        if "joblib" in n.libs:
            templates += ['joblib.dump({p}, "out.joblib")', 'joblib.dump(value={p}, filename="v")']
        templates += [
            f'{n.np}.save("out.npy", {{p}})',
            f'{n.np}.save("out.npy", arr={{p}})',
            f'{n.np}.savetxt("out.txt", {{p}})',
            f'{n.np}.savez("out.npz", {{p}}, extra={{q}})',
            f'{n.np}.savez_compressed("out.npz", a={{p}})',
            f'{n.jnp}.save("j.npy", {{p}})',
        ]
        if "json" in n.libs:
            templates += ["json.dumps({p})", 'json.dumps({"v": {p}})']
        if "marshal" in n.libs:
            templates.append("marshal.dumps({p})")
        if "torch" in n.libs:
            templates.append('torch.save({p}, "t.pt")')
        receiver = p if p.isidentifier() else f"({p})"
        templates += [f"{receiver}.tobytes()", f'{receiver}.tofile("x.bin")']
        return self.pick(templates).replace("{p}", p).replace("{q}", q)

    def file_write(self, scope: Scope, f: str) -> str:
        p = self.payload(scope)
        n = self.n
        templates = [f"{pk}.dump({{p}}, {{f}})" for pk in n.pickles]
        templates += [f"{n.np}.save({{f}}, {{p}})", f"{n.np}.savetxt({{f}}, {{p}})"]
        templates += [f"{{f}}.write({pk}.dumps({{p}}))" for pk in n.pickles]
        templates.append("{p}.tofile({f})" if p.isidentifier() else "({p}).tofile({f})")
        if "joblib" in n.libs:
            templates.append("joblib.dump({p}, {f})")
        if "json" in n.libs:
            templates.append("json.dump({p}, {f})")
        if "marshal" in n.libs:
            templates.append("marshal.dump({p}, {f})")
        return self.pick(templates).replace("{p}", p).replace("{f}", f)

    # ----- statements -------------------------------------------------------------------

    def host_target(self, scope: Scope) -> str:
        kind = self.pick(["global", "attr", "item", "nonlocal"] if scope.outer_locals else
                         ["global", "attr", "item"])  # fmt: skip
        if kind == "global":
            name = self.pick(["BLOB", "LAST", "SNAPSHOT"])
            self.need(f"{name} = None")
            if name not in scope.globals:
                scope.globals.append(name)
            return name
        if kind == "nonlocal":
            name = self.pick(scope.outer_locals)
            if name not in scope.nonlocals:
                scope.nonlocals.append(name)
            return name
        if kind == "attr":
            self.need("class _State:", "    last = None", "", "", "STATE = _State()")
            return "STATE.last"
        self.need("STORE = {}")
        return f'STORE["{self.pick(["k", "blob"])}"]'

    def statement(self, scope: Scope) -> Lines:
        kinds = ["derive", "derive", "ser", "ser", "ser_host", "ser_host", "append", "with"]
        kinds += ["local_ser", "tree_map", "static_ser", "semicolon", "oneliner", "comment"]
        kinds += ["augassign", "walrus", "ser_walrus", "print", "jit_lambda", "lax_lambda"]
        if self.n.jax:
            kinds.append("callback")
        if self.helpers:
            kinds += ["helper", "helper"]
        if scope.depth < 2:
            kinds += ["nested_def", "closure", "nested_with"]
        if scope.depth < 1:
            kinds += ["if", "for", "try"]
        kind = self.pick(kinds)
        n = self.n
        if kind == "derive":
            new = self.fresh(self.pick(LOCAL_BASES))
            line = f"{new} = {self.traced_expr(scope)}"
            if self.chance(6):
                line = f"{new}: object = {self.traced_expr(scope)}"
            scope.traced.append(new)
            return [line]
        if kind == "ser":
            line = self.serialize(scope)
            return [line + "  # keep a copy" if self.chance(5) else line]
        if kind == "ser_walrus":
            new = self.fresh("y")
            line = self.serialize(scope, f"({new} := {self.traced_expr(scope)})")
            scope.traced.append(new)
            return [line]
        if kind == "ser_host":
            if self.chance(8):
                a, b = self.host_target(scope), self.host_target(scope)
                if a != b:
                    return [f"{a}, {b} = {self.serialize(scope)}, {self.serialize(scope)}"]
            return [f"{self.host_target(scope)} = {self.serialize(scope)}"]
        if kind == "append":
            self.need("LOG = []")
            if self.chance(4):
                return [f"LOG.extend([{self.serialize(scope)}])"]
            return [f"LOG.append({self.serialize(scope)})"]
        if kind == "local_ser":
            new = self.fresh("payload")
            lines = [f"{new} = {self.serialize(scope)}"]
            if self.chance(2) and scope.traced:
                v = self.pick(scope.traced)
                lines.append(f"{v} = {v} * len({new})")
            scope.static.append(new)
            return lines
        if kind == "with":
            return self.with_block(scope)
        if kind == "nested_with":
            outer, handle = self.fresh("f"), self.fresh("g")
            first = self.opener(scope)
            block = self.with_block(scope.child(), handle=handle, outer_file=outer)
            return [f"with {first} as {outer}:", *indent(block)]
        if kind == "tree_map":
            v = self.pick(scope.traced) if scope.traced else f"{n.jnp}.ones(2)"
            lam = f"lambda leaf: {self.serialize(scope, 'leaf')}"
            if self.draw(st.booleans()):
                return [f"{n.tree_map}({lam}, {v})"]
            new = self.fresh("tree")
            if self.draw(st.booleans()):
                scope.traced.append(new)
                return [f"{new} = {n.tree_map}(lambda leaf: leaf * 2.0, {v})"]
            return [f"{new} = {n.tree_map}({lam}, {v})"]
        if kind == "static_ser":
            self.need("SEEN = []")
            return [f"SEEN.append({self.serialize(scope, self.static_expr(scope))})"]
        if kind == "semicolon":
            new = self.fresh("y")
            scope.traced.append(new)
            return [f"{new} = {self.traced_expr(scope)}; {self.serialize(scope)}"]
        if kind == "oneliner":
            cond = self.pick([*scope.static, "True", "DEBUG"])
            self.need("DEBUG = True")
            return [f"if {cond}: {self.serialize(scope)}"]
        if kind == "comment":
            return [self.pick(["# a comment", "", "pass"])]
        if kind == "augassign":
            if not scope.traced:
                return ["pass"]
            return [f"{self.pick(scope.traced)} += 1.0"]
        if kind == "walrus":
            new = self.fresh("z")
            scope.traced.append(new)
            return [f"({new} := {self.traced_expr(scope)})"]
        if kind == "print":
            return [f"print({self.payload(scope)})"]
        if kind == "jit_lambda":
            new = self.fresh("y")
            v = self.pick(scope.traced) if scope.traced else "1.0"
            lam = self.pick(["a * 2.0", self.serialize(Scope(["a"], []), "a")])
            scope.traced.append(new)
            return [f"{new} = {n.jit}(lambda a: {lam})({v})"]
        if kind == "lax_lambda":
            new = self.fresh("c")
            v = self.pick(scope.traced) if scope.traced else "0.0"
            lam = self.pick(["c + i", f"c + len({self.serialize(Scope(['c'], []), 'c')})"])
            scope.traced.append(new)
            return [f"{new} = {n.lax}.fori_loop(0, 2, lambda i, c: {lam}, {v})"]
        if kind == "callback":
            v = self.pick(scope.traced) if scope.traced else "1.0"
            if self.draw(st.booleans()):
                return [f"{n.jax}.debug.callback(lambda a: print(a), {v})"]
            host = self.host_logger()
            return [f"{n.jax}.debug.callback({host}, {v}, ordered=True)"]
        if kind == "helper":
            name, arity = self.pick(self.helpers)
            values = [self.payload(scope) for _ in range(arity)]
            args = ", ".join(values)
            style = self.pick(["call", "assign", "assign", "vmap", "tree_map", "partial"])
            if style == "call":
                return [f"{name}({args})"]
            new = self.fresh("r")
            scope.traced.append(new)
            if style == "vmap":
                return [f"{new} = {n.vmap}({name})({args})"]
            if style == "tree_map" and arity == 1:
                return [f"{new} = {n.tree_map}({name}, {args})"]
            if style == "partial" and arity == 2:
                return [f"{new} = {n.partial}({name}, {values[0]})({values[1]})"]
            return [f"{new} = {name}({args})"]
        if kind == "nested_def":
            return self.nested_def(scope)
        if kind == "closure":
            name = self.fresh("_emit")
            inner = scope.child()
            inner.globals, inner.nonlocals = [], []
            body = self.body(inner, final_return=False)
            return [f"def {name}():", *indent(self.declarations(inner) + body), f"{name}()"]
        if kind == "if":
            cond = self.pick([f"{s} > 1" if s == "n" else s for s in scope.static] + ["DEBUG"])
            self.need("DEBUG = True")
            lines = [f"if {cond}:", *indent(self.body(scope.child(), final_return=False))]
            if self.draw(st.booleans()):
                lines += ["else:", *indent(self.body(scope.child(), final_return=False))]
            return lines
        if kind == "for":
            inner = scope.child()
            inner.static.append("_i")
            return ["for _i in range(2):", *indent(self.body(inner, final_return=False))]
        # try
        return [
            "try:",
            *indent(self.body(scope.child(), final_return=False)),
            "except Exception:",
            "    pass",
        ]

    def opener(self, scope: Scope) -> str:
        options = ['open("out.pkl", "wb")', 'open("log.bin", "ab")']
        if "path" in scope.static:
            options.append('open(path, "wb")')
        if "gzip" in self.n.libs:
            options.append('gzip.open("out.gz", "wb")')
        if "io" in self.n.libs:
            options.append('io.open("out.bin", "wb")')
        return self.pick(options)

    def with_block(
        self, scope: Scope, handle: str | None = None, outer_file: str | None = None
    ) -> Lines:
        f = handle or self.fresh("f")
        items = f"{self.opener(scope)} as {f}"
        files = [f]
        if self.chance(5):
            g = self.fresh("g")
            items += f", {self.opener(scope)} as {g}"
            files.append(g)
        elif self.chance(8):
            items += ", open('plain.txt')"
        if outer_file is not None:
            files.append(outer_file)
        lines: Lines = []
        for _ in range(self.pick([1, 1, 1, 2, 3])):
            choice = self.pick(["write", "write", "write", "ser_host", "derive", "append"])
            if choice == "write":
                lines.append(self.file_write(scope, self.pick(files)))
            elif choice == "ser_host":
                lines.append(f"{self.host_target(scope)} = {self.serialize(scope)}")
            elif choice == "append":
                self.need("LOG = []")
                lines.append(f"LOG.append({self.serialize(scope)})")
            else:
                new = self.fresh("y")
                lines.append(f"{new} = {self.traced_expr(scope)}")
                scope.traced.append(new)
        if len(lines) == 1 and self.chance(6):
            return [f"with {items}: {lines[0]}"]
        return [f"with {items}:", *indent(lines)]

    def host_logger(self) -> str:
        """A module-level function only a host callback calls: its dumps are fine."""
        pk = self.n.pickles[0]
        self.need("LOG = []")
        self.need("def _log_host(a):", f"    LOG.append({pk}.dumps(a))")
        return "_log_host"

    def nested_def(self, scope: Scope) -> Lines:
        name = self.fresh("_inner")
        lines: Lines = []
        inner = Scope(["a"], list(scope.static), scope.depth + 1)
        if self.chance(3):
            acc = self.fresh("acc")
            lines.append(f"{acc} = None")
            inner.outer_locals = [acc]
        else:
            inner.outer_locals = []
        body = self.body(inner)
        lines += [f"def {name}(a):", *indent(self.declarations(inner) + body)]
        v = self.pick(scope.traced) if scope.traced else f"{self.n.jnp}.ones(2)"
        new = self.fresh("y")
        scope.traced.append(new)
        n = self.n
        use = self.pick(
            [
                f"{new} = {name}({v})",
                f"{new} = {n.vmap}({name})({v})",
                f"{new} = {n.tree_map}({name}, {v})",
                f"{new} = {n.lax}.cond({v}.sum() > 0, {name}, lambda a: a, {v})",
                f"{new} = {n.jit}({name})({v})",
                f"{new} = {n.lax}.map({name}, {v})",
            ]
        )
        return [*lines, use]

    def declarations(self, scope: Scope) -> Lines:
        lines: Lines = []
        if scope.globals:
            lines.append(f"global {', '.join(scope.globals)}")
        if scope.nonlocals:
            lines.append(f"nonlocal {', '.join(scope.nonlocals)}")
        return lines

    def body(self, scope: Scope, final_return: bool = True, ret: str | None = None) -> Lines:
        lines: Lines = []
        sizes = [1, 1, 2, 2, 3] if final_return and scope.depth == 0 else [0, 1, 1, 1, 2]
        for _ in range(self.pick(sizes)):
            lines += self.statement(scope)
        if final_return:
            if ret is not None:
                lines.append(f"return {ret}")
            else:
                lines.append(self.return_statement(scope))
        if not any(line.strip() and not line.lstrip().startswith("#") for line in lines):
            lines.append("pass")
        return lines

    def return_statement(self, scope: Scope) -> str:
        if not scope.traced:
            return "return None"
        a, b = self.pick(scope.traced), self.pick(scope.traced)
        return self.pick(
            [
                f"return {a}",
                f"return {a}",
                f"return {a}, {b}",
                f"return {self.serialize(scope)}",
                f"return {a}, {self.serialize(scope)}",
                f"return {self.n.tree_map}(lambda leaf: {self.serialize(scope, 'leaf')}, {a})",
                "return",
            ]
        )

    # ----- module-level units -----------------------------------------------------------

    def cache_decorator(self) -> str | None:
        options = [*self.n.caches]
        if self.n.lookalike_cache:
            self.need("def lru_cache(fn):", "    return fn")
            options.append(self.n.lookalike_cache)
        return self.pick(options)

    def function(
        self,
        name: str,
        params: Sequence[str],
        static: Sequence[str],
        decorators: Sequence[str],
        ret: str | None = None,
    ) -> Lines:
        scope = Scope([p for p in params if p not in static], list(static))
        body = self.body(scope, ret=ret)
        header = [f"@{d}" for d in decorators] + [f"def {name}({', '.join(params)}):"]
        return [*header, *indent(self.declarations(scope) + body)]

    def helper(self, index: int) -> Lines:
        name = self.pick(["checkpoint", "encode", "features", "penalty", "log_state"])
        name = f"{name}_{index}"
        arity = self.draw(st.integers(1, 2))
        params = ["v", "u"][:arity]
        decorators = []
        if self.chance(2):
            decorator = self.cache_decorator()
            if decorator:
                decorators.append(decorator)
        lines = self.function(name, params, [], decorators)
        self.helpers.append((name, arity))
        return lines

    def args(self, count: int) -> str:
        return ", ".join(f"{self.n.jnp}.ones(3)" for _ in range(count))

    def traced_unit(self, index: int) -> Lines:
        n = self.n
        kinds = ["jit", "jit", "jit_static", "jit_static", "jit_call", "vmap_call", "grad_call"]
        kinds += ["jit_grad", "scan", "fori", "while", "cond", "vmap_dec", "method", "host"]
        kinds += ["host_tree_map", "shadowed_jax"]
        if n.jax:
            kinds += ["checkpoint", "pmap"]
        kind = self.pick(kinds)
        name = f"{self.pick(['step', 'update', 'forward', 'loss', 'body', 'pack'])}_{index}"
        traced = list(
            self.draw(st.lists(st.sampled_from(TRACED_NAMES), min_size=1, max_size=3, unique=True))
        )
        decorators: Lines = []
        cached = self.chance(3)
        cache = self.cache_decorator() if cached else None
        out = f"out_{index}"
        if kind == "jit":
            decorators = [n.jit]
            self.driver.append(f"{out} = {name}({self.args(len(traced))})")
            return self.with_cache(self.function(name, traced, [], decorators), cache)
        if kind == "jit_static":
            s = self.pick(STATIC_NAMES)
            params = self.draw(st.permutations([*traced, s]))
            position = params.index(s)
            option = self.pick(
                [
                    f'static_argnames="{s}"',
                    f'static_argnames=("{s}",)',
                    f"static_argnums={position}",
                    f"static_argnums=({position},)",
                ]
            )
            decorators = [f"{n.partial}({n.jit}, {option})"]
            call = ", ".join(f'{p}="a"' if p == s else f"{p}={n.jnp}.ones(3)" for p in params)
            self.driver.append(f"{out} = {name}({call})")
            return self.with_cache(self.function(name, params, [s], decorators), cache)
        if kind == "jit_call":
            option = self.pick(["", ", static_argnums=0", ", donate_argnums=0"])
            self.driver.append(f"{name}_jit = {n.jit}({name}{option})")
            self.driver.append(f"{out} = {name}_jit({self.args(len(traced))})")
        elif kind == "vmap_call":
            option = ""
            if len(traced) == 2 and self.draw(st.booleans()):
                option = ", in_axes=(0, None)"
            self.driver.append(f"{out} = {n.vmap}({name}{option})({self.args(len(traced))})")
        elif kind == "grad_call":
            option = self.pick(["", ", argnums=0", ", argnums=(0,)", ", argnums=-1"])
            self.driver.append(f"{out} = {n.grad}({name}{option})({self.args(len(traced))})")
        elif kind == "jit_grad":
            self.driver.append(f"{out} = {n.jit}({n.grad}({name}))({self.args(len(traced))})")
        elif kind == "scan":
            self.driver.append(f"{out} = {n.lax}.scan({name}, {self.args(2)})")
            return self.with_cache(self.function(name, ["c", "xs"], [], [], ret="c, c"), cache)
        elif kind == "fori":
            self.driver.append(f"{out} = {n.lax}.fori_loop(0, 3, {name}, {self.args(1)})")
            return self.with_cache(self.function(name, ["i", "c"], ["i"], [], ret="c"), cache)
        elif kind == "while":
            self.driver.append(
                f"{out} = {n.lax}.while_loop(lambda s: s.sum() < 3.0, {name}, {self.args(1)})"
            )
            return self.with_cache(self.function(name, ["s"], [], [], ret="s + 1.0"), cache)
        elif kind == "cond":
            self.driver.append(
                f"{out} = {n.lax}.cond(True, {name}, lambda *a: a[0], {self.args(len(traced))})"
            )
        elif kind == "vmap_dec":
            decorators = [n.vmap]
            self.driver.append(f"{out} = {name}({self.args(len(traced))})")
        elif kind == "checkpoint":
            decorators = [f"{n.jax}.checkpoint"]
            self.driver.append(f"{out} = {name}({self.args(len(traced))})")
        elif kind == "pmap":
            self.driver.append(f"{out} = {n.jax}.pmap({name})({self.args(len(traced))})")
        elif kind == "method":
            return self.method_unit(name, traced, cache)
        elif kind == "host":
            self.driver.append(f"{out} = {name}({self.args(len(traced))})")
        elif kind == "host_tree_map":
            self.driver.append(f"{out} = {n.tree_map}({name}, {self.args(1)})")
            return self.with_cache(self.function(name, ["leaf"], [], []), cache)
        else:  # shadowed_jax: a local object named jax whose .jit is not jax's
            return self.shadowed_jax_unit(name)
        if cache and self.chance(3):
            self.driver.append(f"{name}.cache_clear()")
        return self.with_cache(self.function(name, traced, [], decorators), cache)

    def with_cache(self, lines: Lines, cache: str | None) -> Lines:
        if cache is None:
            return lines
        decorator_count = next(i for i, line in enumerate(lines) if line.startswith("def "))
        position = self.draw(st.integers(0, decorator_count))
        return [*lines[:position], f"@{cache}", *lines[position:]]

    def method_unit(self, name: str, traced: Sequence[str], cache: str | None) -> Lines:
        n = self.n
        decorators = [f"{n.partial}({n.jit}, static_argnums=0)"]
        apply = self.with_cache(self.function(name, ["self", *traced], ["self"], decorators), cache)
        helper = self.function("_scale", ["self", "v"], ["self"], [])
        # The jitted method calls the plain one on its traced input, after any declarations.
        start = next(i for i, line in enumerate(apply) if line.startswith("def ")) + 1
        while apply[start].strip().startswith(("global ", "nonlocal ")):
            start += 1
        call = f"    {traced[0]} = self._scale({traced[0]})"
        apply = [*apply[:start], call, *apply[start:]]
        cls = f"Model{name.split('_')[-1]}"
        self.driver.append(f"out_{name} = {cls}().{name}({self.args(len(traced))})")
        return [f"class {cls}:", *indent(apply), "", *indent(helper)]

    def shadowed_jax_unit(self, name: str) -> Lines:
        self.need("class _Pipeline:", "    def jit(self, fn):", "        return fn")
        inner = self.function("encode", ["row"], [], ["jax.jit"])
        self.driver.append(f"out_{name} = {name}([[1, 2], [3]])")
        return [
            f"def {name}(rows):",
            "    jax = _Pipeline()",
            "",
            *indent(inner),
            "",
            "    return [encode(r) for r in rows]",
        ]


@st.composite
def jax_programs(draw: DrawFn) -> str:
    """A JAX-shaped module as source text; it always parses and compiles."""
    names = draw(aliases())
    builder = _Builder(draw, names)
    units: list[Lines] = []
    for index in range(draw(st.sampled_from([0, 0, 0, 1, 1]))):
        units.append(builder.helper(index))
    for index in range(draw(st.sampled_from([1, 1, 1, 1, 2]))):
        units.append(builder.traced_unit(index))
    if names.pickles[0] in ("pickle", "pk") and draw(st.integers(0, 5)) == 0:
        # A project object shadowing the pickle module: `pickle.dumps(y)` is not serialization.
        builder.need(
            "class _Recorder:",
            "    def dumps(self, value):",
            '        return b""',
            "",
            "",
            f"{names.pickles[0]} = _Recorder()",
        )
    if draw(st.booleans()):
        pk = names.pickles[0]
        builder.driver.append(f"blob = {pk}.dumps(out_0)")
    if names.jax and draw(st.booleans()):
        builder.driver.append(f"{names.jax}.effects_barrier()")
    head: Lines = []
    if draw(st.booleans()):
        head.append('"""A generated JAX program."""')
    if draw(st.booleans()):
        head.append("from __future__ import annotations")
    if draw(st.booleans()) and head:
        head.append("")
    sections: list[Lines] = [head + names.imports, names.setup]
    sections += [[definition] for definition in builder.prelude] + units
    driver = builder.driver
    style = draw(st.sampled_from(["plain", "main", "guard"]))
    if style == "main":
        driver = ["def main():", *indent(driver or ["pass"]), "", "", 'if __name__ == "__main__":']
        driver.append("    main()")
    elif style == "guard":
        driver = ['if __name__ == "__main__":', *indent(driver or ["pass"])]
    sections.append(driver)
    text = "\n\n\n".join("\n".join(section) for section in sections if section)
    text += "\n"
    compile(text, "<generated>", "exec", dont_inherit=True)  # a generator bug if this fails
    return text
