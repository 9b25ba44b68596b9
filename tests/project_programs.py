"""Generated multi-module JAX projects, and the check that a rewrite keeps their effects.

`projects()` is a Hypothesis strategy for small projects in the shapes real code has: `main.py`
and a package `pkg/` of one to three modules. `pkg/steps.py` defines a jitted function (a public
`step` or a private `_step`, decorated with `@jax.jit`, or a body handed to `jax.lax.scan`)
whose body computes traced values (`h = jnp.tanh(x)`, `g = h * 2` or a grad of a small loss, a
scalar `s`, a dict pytree) and does one to three host things with them, each the bug class
jaxfix rewrites: `np.save`, `LOG.append(pickle.dumps(v))`, `LOG.append(float(s))`,
`print(round(float(s), 4))`, `logger.info("v %s", v)`, `pickle.dump` into a file opened with
`with open(...)`, a store into a module-level dict; directly or through a helper of
`pkg/helpers.py`, their state (lists, dicts, file names) in the module that uses it or in
`pkg/state.py`. `main.py` imports the function, calls it one to three times (assigned, alone, in
a `for` loop, inside `print`) and reads the effects at different points (right after a call,
inside or after the loop, at the end). Every float main prints is rounded to 4 digits via
float64, so that outputs compare; a logged array shows all its digits, compared within
tolerance, and its spacing is made alike (`_spaced`).

`check_projects` writes each project to a folder, runs `jaxfix apply --unsafe-fixes --no-cache`
over a copy (the CLI, in this process), and, for every project the apply changed and left no
finding in, runs the `before` project with jit disabled (`jax.disable_jit()`: its values are
concrete, what its author meant) and the `after` one as usual with host callbacks deferred (as
on an accelerator), all in one interpreter (`jaxfix.proofs.cases.run_programs`), and compares their
effects: stdout, `logging` records and the files left in the working directory
(`jaxfix.proofs.cases.effect_differences`).
"""

from __future__ import annotations

import dataclasses
import re
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st
from hypothesis.strategies import DrawFn

from jaxfix.proofs.cases import ENTRY, Callbacks, Run, effect_differences, run_programs, sources

Lines = list[str]
_SPACES = re.compile(r"[ \t]+")
_PADDING = re.compile(r"(?<=\[) +| +(?=[\],])")  # the padding of an array's numbers
_STANDARD = ("logging", "pickle", "sys")

# What a host statement does with a traced value: the kinds of effects.
KINDS = (
    "np_save",  # np.save(PATH, v)
    "pickle_list",  # LIST.append(pickle.dumps(v))
    "float_list",  # LIST.append(float(s))
    "print_float",  # print("s", round(float(s), 4))
    "log",  # logger.info("v %s", v)
    "pickle_file",  # with open(PATH, "wb") as f: pickle.dump(v, f)
    "store",  # STATE["k"] = v
)
# The values each kind may be given (`float` needs the scalar, `np.save` an array).
VALUES = {
    "np_save": ("h", "g", "s"),
    "pickle_list": ("h", "g", "s", "tree"),
    "float_list": ("s",),
    "print_float": ("s",),
    "log": ("h", "g", "s", "tree"),
    "pickle_file": ("h", "g", "s", "tree"),
    "store": ("h", "g", "s", "tree"),
}
# The module-level name a kind's state has (a list, a dict, a file name).
STATE_NAMES = {
    "np_save": "OUT",
    "pickle_list": "BLOBS",
    "float_list": "VALUES",
    "pickle_file": "DUMP",
    "store": "STATE",
}
HELPER_NAMES = {
    "np_save": "save_array",
    "pickle_list": "keep_blob",
    "float_list": "record",
    "print_float": "report",
    "log": "log_value",
    "pickle_file": "dump_value",
    "store": "remember",
}
ROUNDED = '''\
def r(v):
    """`v` (an array, a number, a dict of them) rounded to 4 digits, as plain lists."""
    if isinstance(v, dict):
        return {k: r(v[k]) for k in sorted(v)}
    return np.round(np.asarray(v, np.float64), 4).tolist()
'''


@dataclass(frozen=True)
class Project:
    """A generated project: each file's path (relative, POSIX) and text; entry `main.py`."""

    files: dict[str, str]
    # How it was drawn, for grouping failures: its shape and each host statement's kind,
    # value, module and state's home (not part of the program).
    tags: tuple[str, ...] = ()

    def write(self, folder: Path) -> Path:
        for name, text in self.files.items():
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            (folder / name).write_text(text, encoding="utf-8")
        return folder

    def show(self, files: dict[str, str] | None = None) -> str:
        return "\n".join(
            f"# ---- {name}\n{text}" for name, text in (files or self.files).items() if text
        )


@dataclass
class Effect:
    """One host statement of the jitted body, and where its state lives."""

    index: int
    kind: str
    value: str  # h, g, s or tree
    helper: bool  # done by a function of pkg/helpers.py
    home: str  # the module (steps, helpers, state) that holds its list / dict / file name
    name: str  # that list's, dict's or file name's name there ("" for print and log)
    path: str  # the file it writes ("" if none)
    literal: bool  # the file name spelled as a literal, not a module constant
    key: str  # the store's key
    level: str  # the log call: info or warning

    def state_in(self, module: _Module, style: str) -> str:
        """How `module`'s code spells the state it writes: its file name as a literal, or the
        name of its list, dict or file name (importing it, in `style`); "" when it has none."""
        if self.literal:
            return f'"{self.path}"'
        return module.refer(self.home, self.name, style) if self.name else ""

    @property
    def own(self) -> str:
        """The module whose code does the host statement."""
        return "helpers" if self.helper else "steps"


class _Module:
    """A module's imports and text, built up."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.plain: set[str] = set()  # import X / import X as Y lines
        self.froms: dict[str, set[str]] = {}  # module: names
        self.top: Lines = []  # module-level state
        self.body: Lines = []

    def from_import(self, module: str, name: str) -> None:
        self.froms.setdefault(module, set()).add(name)

    def refer(self, home: str, name: str, style: str) -> str:
        """How this module spells `name` of the package module `home` (importing it)."""
        if home == self.name:
            return name
        if style == "module":
            self.from_import("pkg", home)
            return f"{home}.{name}"
        self.from_import(f"pkg.{home}", name)
        return name

    def text(self, doc: str) -> str:
        standard = sorted(line for line in self.plain if line.split()[1] in _STANDARD)
        third = sorted(line for line in self.plain if line.split()[1] not in _STANDARD)
        lines = [f'"""{doc}"""', *standard]
        if third:
            lines += ([""] if standard else []) + third
        if self.froms:
            lines.append("")
            lines += [
                f"from {module} import {', '.join(sorted(names))}"
                for module, names in sorted(self.froms.items())
            ]
        if self.top:
            lines += ["", *self.top]
        if self.body:
            lines += ["", "", *self.body]
        return "\n".join(lines).rstrip() + "\n"


@st.composite
def projects(draw: DrawFn) -> Project:
    """A small project: main.py, pkg/__init__.py, pkg/steps.py, maybe helpers.py and state.py."""
    shape = draw(st.sampled_from(["jit", "jit", "scan", "scan_jit"]))
    private = draw(st.booleans())
    # How the private jitted function is reached: main imports it, or a public wrapper calls it.
    wrapped = shape == "jit" and private and draw(st.booleans())
    extra = draw(st.sampled_from([None, "double", "grad"]))
    tree = draw(st.booleans())
    count = draw(st.integers(1, 3))
    effects: list[Effect] = []
    used: set[str] = set()
    for index in range(count):
        kind = draw(st.sampled_from(KINDS))
        choices = [v for v in VALUES[kind] if (v != "g" or extra) and (v != "tree" or tree)]
        value = draw(st.sampled_from(choices))
        helper = draw(st.booleans())
        own = "helpers" if helper else "steps"
        home = draw(st.sampled_from([own, own, "state"])) if kind in STATE_NAMES else own
        name = STATE_NAMES.get(kind, "")
        if name and name in used:
            name = f"{name}{index}"
        used.add(name)
        suffix = {"np_save": ".npy", "pickle_file": ".pkl"}.get(kind, "")
        effects.append(
            Effect(
                index=index,
                kind=kind,
                value=value,
                helper=helper,
                home=home,
                name=name,
                path=f"{value}{index}{suffix}" if suffix else "",
                literal=bool(suffix) and draw(st.booleans()),
                key=f"last_{value}",
                level=draw(st.sampled_from(["info", "warning"])) if kind == "log" else "",
            )
        )
    import_style = draw(st.sampled_from(["module", "name"]))  # how modules import each other
    modules = {name: _Module(name) for name in ("steps", "helpers", "state")}
    steps, helpers = modules["steps"], modules["helpers"]
    steps.plain |= {"import jax", "import jax.numpy as jnp"}

    # Module-level state, in its home.
    for effect in effects:
        holder = modules[effect.home]
        if effect.kind in ("pickle_list", "float_list"):
            holder.top.append(f"{effect.name} = []")
        elif effect.kind == "store":
            holder.top.append(f"{effect.name} = {{}}")
        elif effect.name and not effect.literal:
            holder.top.append(f'{effect.name} = "{effect.path}"')
        if effect.kind == "log" and not any(
            line.startswith("logger =") for line in modules[effect.own].top
        ):
            modules[effect.own].plain.add("import logging")
            modules[effect.own].top.append("logger = logging.getLogger(__name__)")

    # Each host statement, on `v` (a helper's parameter) or on the body's value.
    def statement(effect: Effect, module: _Module, v: str) -> Lines:
        target = effect.state_in(module, import_style)
        if effect.kind in ("pickle_list", "pickle_file"):
            module.plain.add("import pickle")
        if effect.kind == "np_save":
            module.plain.add("import numpy as np")
            return [f"np.save({target}, {v})"]
        if effect.kind == "pickle_list":
            return [f"{target}.append(pickle.dumps({v}))"]
        if effect.kind == "float_list":
            return [f"{target}.append(float({v}))"]
        if effect.kind == "print_float":
            return [f'print("{v}", round(float({v}), 4))']
        if effect.kind == "log":
            return [f'logger.{effect.level}("{effect.value} %s", {v})']
        if effect.kind == "pickle_file":
            return [f'with open({target}, "wb") as f:', f"    pickle.dump({v}, f)"]
        return [f'{target}["{effect.key}"] = {v}']

    # The jitted body: its values, each host statement after the value it reads.
    carry = " + carry" if shape != "jit" else ""
    defined = ["h"]
    lines: Lines = [f"h = jnp.tanh(x{carry})"]
    pending = sorted(effects, key=lambda e: ["h", "g", "s", "tree"].index(e.value))
    definitions = []
    if extra == "double":
        definitions.append(("g", "g = h * 2"))
    elif extra == "grad":
        definitions.append(("g", "g = jax.grad(_loss)(x)"))
    definitions.append(("s", f"s = jnp.sum({'g' if extra else 'h'})"))
    if tree:
        definitions.append(("tree", f'tree = {{"h": h, "g": {"g" if extra else "h * 2"}}}'))
    for value, line in [("h", ""), *definitions]:
        if line:
            lines.append(line)
            defined.append(value)
        ready = [e for e in pending if e.value in defined]
        # Some of the ready statements now, the rest later (after a later value).
        now = ready if value == definitions[-1][0] else draw(st.sampled_from([ready, ready[:1]]))
        for effect in now:
            pending.remove(effect)
            if effect.helper:
                function = HELPER_NAMES[effect.kind] + (str(effect.index) if effect.index else "")
                parameter = draw(st.sampled_from(["v", "value"]))
                helpers.body += [f"def {function}({parameter}):"]
                helpers.body += [
                    "    " + line for line in statement(effect, helpers, parameter)
                ] + ["", ""]
                call = steps.refer("helpers", function, import_style)
                lines.append(f"{call}({effect.value})")
            else:
                lines += statement(effect, steps, effect.value)
    if extra == "grad":
        steps.body += ["def _loss(w):", "    return jnp.sum(jnp.tanh(w) ** 2)", "", ""]
    result = "g * 2" if extra == "grad" else "h * 2"
    function = ("_" if private else "") + ("step" if shape == "jit" else "body")
    entry = function if shape == "jit" and not wrapped else "step"
    if shape == "jit":
        steps.body += ["@jax.jit", f"def {function}(x):"]
        steps.body += ["    " + line for line in [*lines, f"return {result}"]]
        if wrapped:
            call = draw(st.sampled_from(["return _step(x)", "out = _step(x)\n    return out"]))
            steps.body += ["", "", "def step(x):", f"    {call}"]
    else:
        steps.body += [f"def {function}(carry, x):"]
        steps.body += ["    " + line for line in [*lines, f"return carry + s, {result}"]]
        steps.body += ["", ""] + (["@jax.jit"] if shape == "scan_jit" else [])
        steps.body += [
            "def step(xs):",
            f"    _, ys = jax.lax.scan({function}, 0.0, xs)",
            "    return ys",
        ]

    files = {ENTRY: _main(draw, effects, entry, shape != "jit", import_style)}
    files["pkg/__init__.py"] = ""
    docs = {
        "steps": "A jitted step that keeps, saves or logs what it computes.",
        "helpers": "Helpers that keep, save or log the values they are given.",
        "state": "The package's state.",
    }
    for name, module in modules.items():
        if module.top or module.body:
            files[f"pkg/{name}.py"] = module.text(docs[name])
    tags = [shape + ("_private" if private else "") + ("_wrapped" if wrapped else "")]
    tags += [
        f"{e.kind}:{e.value}:{e.own}:{e.home}" + (":literal" if e.literal else "") for e in effects
    ]
    return Project(files, tuple(tags))


def _main(draw: DrawFn, effects: list[Effect], entry: str, rows: bool, style: str) -> str:
    main = _Module("main")
    main.plain |= {"import jax.numpy as jnp", "import numpy as np"}
    function = main.refer("steps", entry, draw(st.sampled_from(["module", "name"])))
    if any(e.kind == "log" and e.level == "info" for e in effects) or (
        any(e.kind == "log" for e in effects) and draw(st.booleans())
    ):
        main.plain |= {"import logging", "import sys"}
        basic = draw(
            st.sampled_from(
                [
                    "logging.basicConfig(level=logging.INFO)",
                    "logging.basicConfig(stream=sys.stdout, level=logging.INFO,"
                    ' format="%(message)s")',
                ]
            )
        )
    else:
        basic = ""

    def read(effect: Effect) -> Lines:
        target = effect.state_in(main, style)
        if effect.kind == "np_save":
            return [f"print(r(np.load({target})))"]
        if effect.kind == "pickle_list":
            main.plain.add("import pickle")
            return [f"print(len({target}), r(pickle.loads({target}[-1])))"]
        if effect.kind == "float_list":
            return [f"print(len({target}), r({target}))"]
        if effect.kind == "pickle_file":
            main.plain.add("import pickle")
            return [f'with open({target}, "rb") as f:', "    print(r(pickle.load(f)))"]
        if effect.kind == "store":
            return [f'print(r({target}["{effect.key}"]))']
        return []

    readable = [e for e in effects if e.kind not in ("print_float", "log")]
    calls = draw(st.integers(1, 3))
    body: Lines = []
    read_once: set[int] = set()
    for number in range(calls):
        argument = draw(st.sampled_from(["x", "x + 1", "x * 0.5"]))
        how = draw(st.sampled_from(["assign", "alone", "loop", "print"]))
        reads = draw(st.lists(st.sampled_from(readable), unique_by=id)) if readable else []
        read_once |= {e.index for e in reads}
        lines = [line for e in reads for line in read(e)]
        if how == "assign":
            body += [f"out = {function}({argument})"]
            body += ["print(r(out))"] if draw(st.booleans()) else []
            body += lines
        elif how == "alone":
            body += [f"{function}({argument})", *lines]
        elif how == "print":
            body += [f"print(r({function}({argument})))", *lines]
        else:
            call = draw(st.sampled_from([f"{function}(x + i)", f"out = {function}(x + i)"]))
            inside = draw(st.booleans())
            body += [f"for i in range({draw(st.integers(2, 3))}):", f"    {call}"]
            body += ["    " + line for line in lines] if inside else lines
        if number == calls - 1:
            # At the end, what no read so far showed (and maybe more).
            last = [e for e in readable if e.index not in read_once or draw(st.booleans())]
            body += [line for e in last for line in read(e)]
    start = (
        "x = jnp.linspace(0.1, 0.9, 6).reshape(2, 3)" if rows else "x = jnp.linspace(0.1, 0.9, 3)"
    )
    main.top = ["", *ROUNDED.splitlines()]
    main.body = [*([basic, ""] if basic else []), start, *body]
    return main.text("Runs the package's step and reads what it kept, saved or logged.")


# ----- the check -----------------------------------------------------------------------------

# What checking a project found (`Checked.status`).
EQUAL = "effects equal"
DIFFER = "effects differ"
APPLY_ERROR = "apply error"
REMAINING = "findings remain"
UNCHANGED = "unchanged"
AFTER_ERROR = "after-run error"
# The fixed project still hands a tracer to host code (it raises a tracer error, or prints or
# logs `Traced<...>`): a host statement jaxfix did not find, not one its rewrite lost.
UNFIXED = "tracer left"
BEFORE_ERROR = "before not concrete-runnable"
RUNNER_ERROR = "runner error"
STATUSES = (
    EQUAL,
    DIFFER,
    AFTER_ERROR,
    UNFIXED,
    APPLY_ERROR,
    REMAINING,
    UNCHANGED,
    BEFORE_ERROR,
    RUNNER_ERROR,
)
_TRACER_ERRORS = {
    "ConcretizationTypeError",
    "TracerArrayConversionError",
    "TracerBoolConversionError",
    "TracerIntegerConversionError",
    "UnexpectedTracerError",
}


@dataclass
class Checked:
    """What checking one project found: a status of `STATUSES`, why, and the fixed files."""

    project: Project
    status: str
    detail: str = ""
    fixed: dict[str, str] = field(default_factory=dict)

    def show(self) -> str:
        text = f"{self.status}: {self.detail}\n== before\n{self.project.show()}"
        return text + (f"\n== after\n{self.project.show(self.fixed)}" if self.fixed else "")


def apply(folder: Path) -> tuple[int, str]:
    """`jaxfix apply --unsafe-fixes --no-cache` over `folder` (its files rewritten), in this
    process: the exit status and what it printed."""
    from click.testing import CliRunner

    from jaxfix import cli

    arguments = ["apply", "--unsafe-fixes", "--no-cache", "--isolated", "-j", "1", str(folder)]
    result = CliRunner().invoke(cli.main, arguments)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        return 2, f"{result.exception!r}\n{result.output}"
    return result.exit_code, result.output


def prepare(project: Project, folder: Path) -> Checked | tuple[Path, Path, dict[str, str]]:
    """Write `project` to `folder`/before, apply jaxfix to a copy, `folder`/after: the two
    entries and the fixed files when there is something to run, else the verdict."""
    before = project.write(folder / "before")
    after = folder / "after"
    shutil.copytree(before, after)
    try:
        status, output = apply(after)
    except Exception as error:  # the CLI itself failed
        return Checked(project, APPLY_ERROR, repr(error))
    fixed = sources(after)
    if status == 2:
        return Checked(project, APPLY_ERROR, output.strip(), fixed)
    if status != 0:
        return Checked(project, REMAINING, output.strip(), fixed)
    if fixed == sources(before):
        return Checked(project, UNCHANGED, output.strip())
    return before / ENTRY, after / ENTRY, fixed


def judge(project: Project, fixed: dict[str, str], concrete: Run, deferred: Run) -> Checked:
    """The verdict on the runs of the before project (concrete) and the after one (deferred)."""
    if concrete.error is not None:
        return Checked(project, BEFORE_ERROR, f"{concrete.error[0]}: {concrete.error[1]}", fixed)
    if deferred.error is not None:
        detail = f"{deferred.error[0]}: {deferred.error[1]}\nprinted {deferred.stdout!r}"
        status = UNFIXED if deferred.error[0] in _TRACER_ERRORS else AFTER_ERROR
        return Checked(project, status, detail, fixed)
    differences = effect_differences(_spaced(concrete), _spaced(deferred))
    if not differences:
        return Checked(project, EQUAL, "", fixed)
    traced = any("Traced<" in text for text in (deferred.stdout, *deferred.logs))
    return Checked(project, UNFIXED if traced else DIFFER, "; ".join(differences), fixed)


def _spaced(run: Run) -> Run:
    """`run` with its printed and logged text spaced alike: NumPy pads an array's numbers to
    one width, which a last digit of a logged float32 changes (`[0.9580689  0.6975557]` where
    the concrete run logs `[0.95806885 0.6975557 ]`, `Array([0.9580689 , ...` for
    `Array([0.95806885, ...`); the numbers are compared within tolerance anyway."""

    def spaced(text: str) -> str:
        return _PADDING.sub("", _SPACES.sub(" ", text))

    return dataclasses.replace(run, stdout=spaced(run.stdout), logs=tuple(map(spaced, run.logs)))


def drawn(count: int, chunk_seed: int | None = None) -> list[Project]:
    """`count` projects as Hypothesis draws them (`projects`), generated only: with
    `chunk_seed`, the same for the same seed (`scripts/fuzz_effects.py`'s chunks); without, a
    fixed sample (`derandomize`, no database: the suite's)."""
    found: list[Project] = []

    def collect(project: Project) -> None:
        found.append(project)

    run = settings(
        max_examples=count,
        derandomize=chunk_seed is None,
        database=None,
        deadline=None,
        phases=(Phase.generate,),
        suppress_health_check=list(HealthCheck),
    )(given(projects())(collect))
    (run if chunk_seed is None else seed(chunk_seed)(run))()
    return found


def check_project(project: Project) -> Checked:
    """Check one project (see the module's docstring)."""
    return check_projects([project])[0]


def check_projects(projects: Sequence[Project], python: str | None = None) -> list[Checked]:
    """Check each project (see the module's docstring); the runs of all of them in one
    interpreter (a project whose runs break it is checked again alone)."""
    import sys

    with tempfile.TemporaryDirectory(prefix="jaxfix-effects-") as scratch:
        prepared = [prepare(p, Path(scratch) / str(n)) for n, p in enumerate(projects)]
        to_run = [p for p in prepared if isinstance(p, tuple)]
        # jax starts its backend in the first program that computes, and may log a line then
        # (no TPU found) to a handler that program set up: a warm-up program takes it.
        warm_up = Path(scratch) / "warm_up.py"
        warm_up.write_text("import jax.numpy as jnp\n\njnp.ones(1).block_until_ready()\n")
        programs = [warm_up] + [p for before, after, _ in to_run for p in (before, after)]
        modes = [Callbacks.SYNCHRONOUS] + [Callbacks.CONCRETE, Callbacks.DEFERRED] * len(to_run)
        runs: list[Run] | None
        try:
            runs = run_programs(programs, python or sys.executable, modes)[1:]
        except RuntimeError:
            runs = None
        checked: list[Checked] = []
        for project, ready in zip(projects, prepared, strict=True):
            if not isinstance(ready, tuple):
                checked.append(ready)
                continue
            before, after, fixed = ready
            if runs is not None:
                concrete, deferred = runs[0], runs[1]
                runs = runs[2:]
            else:
                try:
                    _, concrete, deferred = run_programs(
                        [warm_up, before, after], python or sys.executable, modes[:3]
                    )
                except RuntimeError as error:
                    checked.append(Checked(project, RUNNER_ERROR, str(error), fixed))
                    continue
            checked.append(judge(project, fixed, concrete, deferred))
    return checked
