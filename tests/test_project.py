"""Tracing across the modules of a run: helpers imported from the project and called from traced
code are traced too (relative imports, `__init__` re-exports, chains, the cache)."""

from __future__ import annotations

import ast
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from jaxfix.analysis.project import (
    Entry,
    ModuleFacts,
    Place,
    ProjectIndex,
    TracedCall,
    note_top_level,
    place_of,
)
from jaxfix.cli import main
from jaxfix.run import engine, runner
from jaxfix.run.job import Job
from jaxfix.run.outcome import Outcome

SAVER = """\
import pickle


def save_blob(log, value, tag="x"):
    log.append(pickle.dumps(value))
    return tag


def save_tag(log, tag):
    log.append(pickle.dumps(tag))
"""

TRAINER = """\
import jax
{imports}

LOG = []


@jax.jit
def step(x):
    y = x * 2
    {call}
    return y
"""


@pytest.fixture(autouse=True)
def later_rounds_analyse_parts(monkeypatch: pytest.MonkeyPatch) -> None:
    """Later rounds analyse only the part of a file their entries need, however small the file
    (the corpus's must be `MIN_OUTLINED` characters long): every finding below must be found
    as in the whole file, and a part that finds one is analysed whole."""
    monkeypatch.setattr(engine, "MIN_OUTLINED", 0)


def invoke(*args: str) -> Result:
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def tree(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return root


def found(result: Result, root: Path) -> list[str]:
    """`file:line CODE` of each finding, the file relative to `root`."""
    return [
        f"{Path(path).relative_to(root).as_posix()}:{line} {code}"
        for path, line, code in re.findall(r"^(\S+?):(\d+):\d+: (JF\d+)", result.stdout, re.M)
    ]


def trainer(imports: str, call: str) -> str:
    return TRAINER.format(imports=imports, call=call)


@pytest.mark.parametrize(
    ("imports", "call"),
    [
        ("from pkg.io import save_blob", "save_blob(LOG, y)"),
        ("from .io import save_blob", "save_blob(LOG, y)"),
        ("from . import io", "io.save_blob(LOG, y)"),
        ("import pkg.io", "pkg.io.save_blob(LOG, y)"),
        ("from pkg.io import save_blob as keep", "keep(LOG, value=y)"),
        ("from pkg import save_blob", "save_blob(LOG, y)"),  # re-exported by __init__
        ("from pkg.io import save_blob", "save_blob(LOG, *[y])"),
    ],
    ids=["absolute", "relative", "module", "dotted", "alias-keyword", "reexport", "star-args"],
)
def test_a_helper_called_from_traced_code_in_another_module_is_traced(
    tmp_path: Path, imports: str, call: str
) -> None:
    root = tree(
        tmp_path,
        {
            "pkg/__init__.py": "from .io import save_blob\n",
            "pkg/io.py": SAVER,
            "pkg/train.py": trainer(imports, call),
        },
    )
    result = invoke("check", "--no-cache", str(root / "pkg"))
    assert found(result, root) == ["pkg/io.py:5 JF101"]
    assert "called from traced `pkg.train.step`" in result.stdout


RUNNER = """\
import pickle


def run(spec, *args, tag=None):
    pickle.dumps(spec)
    pickle.dumps(tag)
    return args
"""


@pytest.mark.parametrize(
    ("call", "expected"),
    [("run(SPEC, *y)", []), ("run(y, *y)", ["pkg/runner.py:5 JF101"])],
    ids=["lookalike", "twin"],
)
def test_a_traced_star_argument_fills_only_the_parameters_from_its_position(
    tmp_path: Path, call: str, expected: list[str]
) -> None:
    """jax's `eval_jaxpr(jaxpr, consts, *args)` from traced code: `jaxpr` (here `SPEC`, what
    an unknown function made) is not a tracer because `args` are, nor is a keyword-only
    parameter."""
    imports = "from pkg.runner import run\nfrom somewhere import load_spec\nSPEC = load_spec()"
    root = tree(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/runner.py": RUNNER,
            "pkg/train.py": trainer(imports, call),
        },
    )
    assert found(invoke("check", "--no-cache", str(root)), root) == expected


def test_only_the_parameters_given_tracers_are_traced(tmp_path: Path) -> None:
    root = tree(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/io.py": SAVER,
            "pkg/train.py": trainer("from pkg.io import save_tag", 'save_tag(LOG, "epoch")'),
        },
    )
    assert found(invoke("check", "--no-cache", str(root)), root) == []


def test_a_parameter_also_given_python_values_elsewhere_is_not_traced(tmp_path: Path) -> None:
    """`save_blob(LOG, y)` in one module, `save_blob(LOG, "config")` in traced code of another:
    `value` is polymorphic, so only the rest of the helper counts as traced."""
    other = trainer("from pkg.io import save_blob", 'save_blob(LOG, "config")')
    root = tree(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/io.py": SAVER,
            "pkg/train.py": trainer("from pkg.io import save_blob", "save_blob(LOG, y)"),
            "pkg/setup.py": other,
        },
    )
    assert found(invoke("check", "--no-cache", str(root)), root) == []
    (root / "pkg/setup.py").unlink()  # the traced caller alone: reported, as above
    assert found(invoke("check", "--no-cache", str(root)), root) == ["pkg/io.py:5 JF101"]


def test_a_chain_through_three_modules_is_followed(tmp_path: Path) -> None:
    root = tree(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/io.py": SAVER,
            "pkg/middle.py": """\
                from pkg.io import save_blob


                def record(log, value):
                    return save_blob(log, value + 1)
                """,
            "pkg/train.py": trainer("from pkg.middle import record", "record(LOG, y)"),
        },
    )
    result = invoke("check", "--no-cache", str(root))
    assert found(result, root) == ["pkg/io.py:5 JF101"]
    assert "called from traced `pkg.middle.record`" in result.stdout


def test_a_new_caller_alone_does_not_analyse_a_module_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`lib.f` is traced from `z.g` (jitted), then also from `a.h`, which `f` itself traces: the
    second entry differs from the first only in its caller, which changes no finding."""
    root = tree(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/lib.py": """\
                import pickle

                from pkg import a


                def f(x):
                    pickle.dumps(x)
                    return a.h(x)
                """,
            "pkg/a.py": """\
                from pkg import lib


                def h(x):
                    return lib.f(x)
                """,
            "pkg/z.py": """\
                import jax

                from pkg import lib


                @jax.jit
                def g(x):
                    return lib.f(x)
                """,
        },
    )
    analysed: list[str] = []
    process = runner.process

    def counting(path: Path, job: Job) -> Outcome:
        analysed.append(path.name)
        return process(path, job)

    monkeypatch.setattr(runner, "process", counting)
    result = invoke("check", "--no-cache", "--jobs", "1", str(root / "pkg"))
    assert found(result, root) == ["pkg/lib.py:7 JF101"]
    assert "called from traced `pkg.z.g`" in result.stdout
    # Alone, then entered from z.g (not again for a.h); then twice as the caller of `a.h`,
    # which runs `f`'s own host callback: told so (`project.WAITS`), then the verdict.
    assert analysed.count("lib.py") == 4


def test_a_module_outside_the_paths_given_is_not_analysed(tmp_path: Path) -> None:
    root = tree(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/io.py": SAVER,
            "pkg/train.py": trainer("from pkg.io import save_blob", "save_blob(LOG, y)"),
        },
    )
    assert found(invoke("check", "--no-cache", str(root / "pkg" / "train.py")), root) == []


def test_scripts_beside_each_other_trace_each_other(tmp_path: Path) -> None:
    root = tree(
        tmp_path,
        {
            "helpers.py": SAVER,
            "main.py": trainer("from helpers import save_blob", "save_blob(LOG, y)"),
        },
    )
    assert found(invoke("check", "--no-cache", str(root)), root) == ["helpers.py:5 JF101"]


def test_apply_fixes_the_helper_in_its_own_module(tmp_path: Path) -> None:
    root = tree(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/io.py": SAVER,
            "pkg/train.py": trainer("from pkg.io import save_blob", "save_blob(LOG, y)"),
        },
    )
    invoke("apply", "--unsafe-fixes", "--no-cache", str(root))
    fixed = (root / "pkg" / "io.py").read_text()
    assert "jax.debug.callback(_host_pickle_dumps, value, ordered=True)" in fixed
    assert "pickle.dumps(tag)" in fixed  # save_tag is not traced: untouched
    assert (root / "pkg" / "train.py").read_text() == trainer(
        "from pkg.io import save_blob", "save_blob(LOG, y)"
    )


def test_a_warm_run_answers_from_the_cache_with_the_same_findings(tmp_path: Path) -> None:
    root = tree(
        tmp_path / "src",
        {
            "pkg/__init__.py": "",
            "pkg/io.py": SAVER,
            "pkg/train.py": trainer("from pkg.io import save_blob", "save_blob(LOG, y)"),
        },
    )
    cache = str(tmp_path / "cache")
    cold = invoke("check", "--cache-dir", cache, str(root))
    warm = invoke("check", "--cache-dir", cache, str(root))
    assert found(cold, root) == found(warm, root) == ["pkg/io.py:5 JF101"]
    (root / "pkg" / "train.py").write_text(trainer("", "y = y + 1"))
    assert found(invoke("check", "--cache-dir", cache, str(root)), root) == []


def test_place_of_a_module_follows_the_package_folders(tmp_path: Path) -> None:
    tree(tmp_path, {"a/__init__.py": "", "a/b/__init__.py": "", "a/b/c.py": "", "d.py": ""})
    assert place_of(tmp_path / "a" / "b" / "c.py") == Place("a.b.c", "a.b")
    assert place_of(tmp_path / "a" / "b" / "__init__.py") == Place("a.b", "a.b")
    assert place_of(tmp_path / "d.py") == Place("d", "")
    assert Place("a.b.c", "a.b").absolute("..x.f") == "a.x.f"
    assert Place("a.b.c", "a.b").absolute(".c.f") == "a.b.c.f"


def test_entries_merge_every_call_to_a_function(tmp_path: Path) -> None:
    tree(tmp_path, {"pkg/__init__.py": "from .io import save_blob\n", "pkg/io.py": SAVER})
    paths = [tmp_path / "pkg" / "__init__.py", tmp_path / "pkg" / "io.py"]
    facts = {path: ModuleFacts() for path in paths}
    for path, fact in facts.items():
        note_top_level(ast.parse(path.read_text()), fact)
    index = ProjectIndex({path: place_of(path) for path in paths}, facts)
    calls = [
        TracedCall("pkg.save_blob", Entry("", (1,), (), None, True, "called from traced `b`")),
        TracedCall("pkg.io.save_blob", Entry("", (), ("tag",), 2, False, "called from `a`")),
        TracedCall("pkg.io.missing", Entry("", (0,))),
    ]
    assert index.entries(calls) == {
        tmp_path / "pkg" / "io.py": (
            Entry("save_blob", (1,), ("tag",), 2, True, "called from `a`"),
        )
    }


def test_a_transforms_entry_fills_only_the_required_parameters_until_a_call_fills_all(
    tmp_path: Path,
) -> None:
    """`jax.jit(save_blob)` elsewhere traces its parameters without a default; merged with a
    traced call that gives a parameter by position, that one is traced too; with a traced
    `*args`, every one."""
    tree(tmp_path, {"pkg/__init__.py": "", "pkg/io.py": SAVER})
    path = tmp_path / "pkg" / "io.py"
    facts = {path: ModuleFacts()}
    note_top_level(ast.parse(path.read_text()), facts[path])
    index = ProjectIndex({path: place_of(path)}, facts)
    jitted = Entry("", (), ("**",), 0, True, "passed to `jax.jit`", required_only=True)
    by_position = Entry("", (2,), (), None, True, "called from traced `b`")
    by_star = Entry("", (), (), 1, True, "called from traced `c`")

    def merged(*entries: Entry) -> Entry:
        calls = [TracedCall("pkg.io.save_blob", entry) for entry in entries]
        (entry,) = index.entries(calls)[path]
        return entry

    assert merged(jitted, by_position).required_only
    assert merged(jitted, by_position).positions == (2,)
    assert not merged(jitted, by_star).required_only
    assert not merged(by_position).required_only


def test_calling_what_a_helper_returns_does_not_trace_the_helper(tmp_path: Path) -> None:
    root = tree(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/model.py": """\
                import functools

                import jax


                @functools.lru_cache(maxsize=None)
                def make_update(lr):
                    return jax.jit(lambda p, g: p - lr * g)
                """,
            "pkg/train.py": trainer(
                "from pkg.model import make_update", "y = make_update(0.1)(y, x)"
            ),
        },
    )
    assert found(invoke("check", "--no-cache", str(root)), root) == []


@pytest.mark.parametrize(
    ("imports", "decorator", "after"),
    [
        ("from pkg.compile import compiled", "@compiled", ""),
        ("from .compile import compiled", "@compiled", ""),
        ("from pkg import compile", "@compile.compiled", ""),
        (
            "from functools import partial\nfrom pkg.compile import compiled",
            "@partial(compiled)",
            "",
        ),
        ("from pkg.compile import compiled", "# handed over below", "fast = compiled(step)"),
        ("from pkg import compile", "# handed over below", "fast = compile.compiled(step)"),
    ],
    ids=["absolute", "relative", "module", "partial", "called", "called-through-module"],
)
def test_a_jit_wrapper_of_another_module_traces_what_it_decorates_or_is_called_on(
    tmp_path: Path, imports: str, decorator: str, after: str
) -> None:
    root = tree(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/compile.py": """\
                import jax


                def compiled(fn):
                    return jax.jit(fn, donate_argnums=0)


                def logged(fn):
                    print(fn.__name__)
                    return fn
                """,
            "pkg/train.py": f"""\
{imports}
import pickle

LOG = []


{decorator}
def step(x):
    LOG.append(pickle.dumps(x))
    return x


{after}
""",
        },
    )
    result = invoke("check", "--no-cache", str(root))
    line = 9 + imports.count("\n")
    assert found(result, root) == [f"pkg/train.py:{line} JF101"]
    assert ("passed to `" if after else "decorated with `") in result.stdout


@pytest.mark.parametrize("usage", ["decorated", "called"])
def test_the_static_arguments_of_another_modules_jit_wrapper_stay_static(
    tmp_path: Path, usage: str
) -> None:
    """`jax.jit(fn, static_argnums=1, static_argnames="mode")` inside the wrapper: the second
    parameter and `mode` of what it wraps hold Python values, whichever module wraps it."""
    root = tree(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/compile.py": """\
                import jax


                def compiled(fn):
                    return jax.jit(fn, static_argnums=1, static_argnames="mode")
                """,
            "pkg/train.py": f"""\
import pickle

from pkg.compile import compiled

LOG = []


{"@compiled" if usage == "decorated" else "# handed over below"}
def step(x, n, mode="fast"):
    LOG.append(pickle.dumps(n))
    LOG.append(pickle.dumps(mode))
    LOG.append(pickle.dumps(x))
    return x * n


{"" if usage == "decorated" else "fast = compiled(step)"}
""",
        },
    )
    assert found(invoke("check", "--no-cache", str(root)), root) == ["pkg/train.py:12 JF101"]


@pytest.mark.parametrize(
    "transform",
    ["jax.vmap(fn, in_axes=(0, None))", "jax.vmap(fn, (0, None))", "jax.grad(fn, argnums=0)"],
)
def test_another_modules_wrapper_traces_as_the_transform_it_applies(
    tmp_path: Path, transform: str
) -> None:
    """A vmap wrapper stages nothing (`jnp.zeros(3)` is an array) and leaves an unbatched
    argument concrete; a grad wrapper traces only the arguments it differentiates."""
    root = tree(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/wrap.py": f"import jax\n\n\ndef wrapped(fn):\n    return {transform}\n",
            "pkg/train.py": """\
                import pickle

                import jax.numpy as jnp

                from pkg.wrap import wrapped

                LOG = []


                @wrapped
                def step(x, scale):
                    LOG.append(pickle.dumps(scale))
                    LOG.append(pickle.dumps(jnp.zeros(3)))
                    LOG.append(pickle.dumps(x))
                    return (x * scale).sum()
                """,
        },
    )
    assert found(invoke("check", "--no-cache", str(root)), root) == ["pkg/train.py:14 JF101"]


def test_a_decorator_of_another_module_that_does_not_trace_is_not_a_transform(
    tmp_path: Path,
) -> None:
    root = tree(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/compile.py": "def logged(fn):\n    return fn\n",
            "pkg/train.py": """\
                import pickle

                import jax
                from pkg.compile import logged

                LOG = []


                @logged
                def step(x):
                    LOG.append(pickle.dumps(x))
                    return jax.numpy.sin(x)
                """,
        },
    )
    assert found(invoke("check", "--no-cache", str(root)), root) == []


# ----- JF107 across modules ---------------------------------------------------------------

ENCODER = """\
import pickle

import jax


@jax.jit
def encode(x):
    return pickle.dumps(x * 2)
"""


def caller(body: str, imports: str = "from pkg.enc import encode") -> str:
    return f"import jax.numpy as jnp\n{imports}\n\n\ndef main():\n    {body}\n"


def encoder_project(root: Path, caller_text: str, **more: str) -> Path:
    return tree(
        root,
        {"pkg/__init__.py": "", "pkg/enc.py": ENCODER, "pkg/use.py": caller_text, **more},
    )


@pytest.mark.parametrize(
    ("imports", "body", "rewritten"),
    [
        (
            "from pkg.enc import encode",
            "blob = encode(jnp.ones(2))",
            "blob = pickle.dumps(jax.device_get(encode(jnp.ones(2))))",
        ),
        (
            "from pkg import enc",
            "return enc.encode(jnp.ones(2))",
            "return pickle.dumps(jax.device_get(enc.encode(jnp.ones(2))))",
        ),
        (
            "from .enc import encode as e",
            "print(len(e(jnp.ones(2))))",
            "print(len(pickle.dumps(jax.device_get(e(jnp.ones(2))))))",
        ),
    ],
    ids=["from-import", "module-attribute", "relative-alias"],
)
def test_call_sites_in_another_module_are_rewritten_with_the_function(
    tmp_path: Path, imports: str, body: str, rewritten: str
) -> None:
    root = encoder_project(tmp_path, caller(body, imports))
    checked = invoke("check", "--no-cache", str(root))
    # The call site is a part of the function's fix (named in its title), no finding.
    assert found(checked, root) == ["pkg/enc.py:8 JF107"]
    assert f"it also changes {root / 'pkg' / 'use.py'}" in checked.stdout
    invoke("apply", "--unsafe-fixes", "--no-cache", str(root))
    assert (root / "pkg" / "enc.py").read_text() == ENCODER.replace(
        "import pickle\n\n", ""
    ).replace("pickle.dumps(x * 2)", "x * 2")
    used = (root / "pkg" / "use.py").read_text()
    assert f"    {rewritten}\n" in used
    assert "import pickle\n" in used and "import jax\n" in used
    assert found(invoke("check", "--no-cache", str(root)), root) == []


def test_a_module_traced_from_another_keeps_its_call_sites_of_a_third(tmp_path: Path) -> None:
    """`use.py` is analysed again in a round across modules (`run.py`'s traced code calls its
    `helper`); what its tree tells the run, its import of `encode`, is noted in its first
    round only and must reach the step that finds the call sites a JF107 fix rewrites."""
    used = caller("blob = encode(jnp.ones(2))")
    used += "\n\ndef helper(x):\n    print(x.shape)\n    return x * 2\n"
    runner = "import jax\nfrom pkg.use import helper\n\n\n@jax.jit\ndef step(x):\n"
    runner += "    return helper(x)\n"
    root = encoder_project(tmp_path, used, **{"pkg/run.py": runner})
    checked = invoke("check", "--no-cache", str(root))
    assert found(checked, root) == ["pkg/enc.py:8 JF107"]
    invoke("apply", "--unsafe-fixes", "--no-cache", str(root))
    assert (
        "blob = pickle.dumps(jax.device_get(encode(jnp.ones(2))))"
        in (root / "pkg" / "use.py").read_text()
    )


@pytest.mark.parametrize(
    ("files", "why"),
    [
        ({"pkg/use.py": caller("blobs = list(map(encode, [jnp.ones(2)]))")}, "used as a value"),
        (
            {
                "pkg/use.py": caller("blob = encode(jnp.ones(2))"),
                "pkg/__init__.py": "from .enc import encode\n",
            },
            "re-exported by",
        ),
        (
            {
                "pkg/use.py": "import jax\nfrom pkg.enc import encode\n\n\n"
                "@jax.jit\ndef twice(x):\n    return encode(x)\n"
            },
            "called from traced code",
        ),
    ],
    ids=["passed-as-value", "reexported", "called-from-traced-code"],
)
def test_a_call_site_that_cannot_be_rewritten_leaves_both_modules_alone(
    tmp_path: Path, files: dict[str, str], why: str
) -> None:
    root = tree(tmp_path, {"pkg/__init__.py": "", "pkg/enc.py": ENCODER, **files})
    before = {path: path.read_text() for path in root.rglob("*.py")}
    checked = invoke("check", "--no-cache", str(root))
    assert "pkg/enc.py:8 JF107" in found(checked, root)
    assert why in checked.stdout
    invoke("apply", "--unsafe-fixes", "--no-cache", str(root))
    assert {path: path.read_text() for path in root.rglob("*.py")} == before


def test_a_tuple_part_is_serialized_after_the_call_in_the_other_module(tmp_path: Path) -> None:
    encoder = ENCODER.replace("return pickle.dumps(x * 2)", "return x.sum(), pickle.dumps(x)")
    root = tree(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/enc.py": encoder,
            "pkg/use.py": caller("total, blob = encode(jnp.ones(2))"),
        },
    )
    invoke("apply", "--unsafe-fixes", "--no-cache", str(root))
    used = (root / "pkg" / "use.py").read_text()
    assert (
        "    total, blob = encode(jnp.ones(2))\n    blob = pickle.dumps(jax.device_get(blob))\n"
        in used
    )


LOSSES = """\
import pickle

import jax.numpy as jnp

SNAPSHOTS = []


def loss(params, x):
    SNAPSHOTS.append(pickle.dumps(params))
    return jnp.sum((params * x) ** 2)


def second(params, x):
    return pickle.dumps(x)


def tagged(params, tag=None, *, note=None):
    SNAPSHOTS.append(pickle.dumps(tag))
    SNAPSHOTS.append(pickle.dumps(note))
    return params
"""


@pytest.mark.parametrize(
    ("applied", "findings"),
    [
        ("fn = jax.grad(loss)", ["pkg/losses.py:9 JF101"]),
        ("fn = jax.jit(losses.loss)", ["pkg/losses.py:9 JF101"]),
        ("fn = jax.jit(second)", ["pkg/losses.py:14 JF107"]),
        ("fn = jax.grad(second)", []),  # argnums=0: `x` is given as it is
        ("fn = jax.grad(second, argnums=1)", ["pkg/losses.py:14 JF107"]),
        ("fn = jax.jit(second, static_argnums=1)", []),
        ("fn = jax.jit(second, static_argnames='x')", []),
        ("fn = jax.vmap(second, in_axes=(0, None))", []),
        ("fn = jax.vmap(second)", ["pkg/losses.py:14 JF107"]),
        ("fn = jax.jit(functools.partial(second, 1.0))", ["pkg/losses.py:14 JF107"]),
        ("fn = jax.jit(functools.partial(second, x=1.0))", []),  # bound: concrete
        ("fn = jax.grad(functools.partial(second, 1.0))", ["pkg/losses.py:14 JF107"]),
        ("fn = jax.jit(functools.partial(loss, 1.0), static_argnums=0)", []),
        ("fn = jax.jit(functools.partial(second, *ARGS))", []),  # fills what is unknown
        ("fn = jax.jit(tagged)", []),  # a call may leave `tag` and `note` to their defaults
        ("fn = jax.vmap(functools.partial(tagged, note=1))", []),  # as `jnp.mean` in equinox
        ("fn = jax.custom_jvp(second)", []),  # traces nothing by itself
        ("fn = jax.eval_shape(second, 1.0, 2.0)", []),  # never runs it
        ("fn = jax.grad(tagged, argnums=1)", ["pkg/losses.py:18 JF101"]),
        ("fn = jax.jit(functools.partial)", []),  # not a function of the run
    ],
)
def test_a_transform_applied_to_an_imported_function_traces_it_there(
    tmp_path: Path, applied: str, findings: list[str]
) -> None:
    """`jax.grad(loss)` in one module traces `loss` in the module that defines it, with the
    parameters the transform traces (its `argnums`, all but its static arguments, those
    `in_axes` batches)."""
    train = (
        "import functools\n\nimport jax\n\n"
        f"from pkg import losses\nfrom pkg.losses import loss, second, tagged\n\n{applied}\n"
    )
    root = tree(tmp_path, {"pkg/__init__.py": "", "pkg/losses.py": LOSSES, "pkg/train.py": train})
    checked = invoke("check", "--no-cache", str(root))
    assert found(checked, root) == findings
    transform = applied.split("(")[0].split("= ")[1]
    assert all(f"(passed to `{transform}` in `pkg.train`)" in checked.stdout for _ in findings)


def fails_then_runs_fixed(root: Path, command: list[str], stdout: str) -> None:
    """`command` (run in `root`) fails on a tracer; after `apply --unsafe-fixes` it prints
    `stdout`."""

    def ran() -> subprocess.CompletedProcess[str]:
        argv = [sys.executable, *command]
        return subprocess.run(argv, cwd=root, capture_output=True, text=True, timeout=300)

    assert "ConcretizationTypeError" in ran().stderr
    assert invoke("apply", "--unsafe-fixes", "--no-cache", str(root)).exit_code == 0
    after = ran()
    assert after.returncode == 0, after.stderr
    assert after.stdout == stdout


@pytest.mark.jax
def test_a_loss_imported_and_differentiated_fails_before_and_runs_after(tmp_path: Path) -> None:
    train = "import jax\n\nfrom pkg.losses import loss\n\ngrad_fn = jax.grad(loss)\n"
    run = (
        "import pickle\n\nimport jax.numpy as jnp\n\nfrom pkg import losses\n"
        "from pkg.train import grad_fn\n\n"
        "print(grad_fn(jnp.ones(3), jnp.arange(3.0)).tolist())\n"
        "print([pickle.loads(s).tolist() for s in losses.SNAPSHOTS])\n"
    )
    files = {"pkg/__init__.py": "", "pkg/losses.py": LOSSES, "pkg/train.py": train, "run.py": run}
    fails_then_runs_fixed(tree(tmp_path, files), ["run.py"], "[0.0, 2.0, 8.0]\n[[1.0, 1.0, 1.0]]\n")


@pytest.mark.jax
def test_the_multi_module_example_fails_before_and_runs_after(tmp_path: Path) -> None:
    copy = tmp_path / "multi_module"
    shutil.copytree(Path(__file__).parent.parent / "examples" / "multi_module", copy)
    expected = "ndarray [1.2, 3.0, 12.0]\ntotal 16.20\n"
    fails_then_runs_fixed(copy, ["-m", "shop.report"], expected)


@pytest.mark.jax
def test_the_training_example_fails_before_and_runs_after(tmp_path: Path) -> None:
    """A jitted step whose helper modules checkpoint, log and buffer: after the fix it writes
    what the program computes run eagerly (`JAX_DISABLE_JIT=1`)."""
    copy = tmp_path / "training"
    shutil.copytree(Path(__file__).parent.parent / "examples" / "training", copy)
    expected = (
        "losses [1.0, 0.3641, 0.0137]\n"
        "batches 3 [[1.0, 2.0], [0.5, 2.0]]\n"
        "checkpoint [0.2436, 0.4031]\n"
    )
    fails_then_runs_fixed(copy, ["-m", "trainer.run"], expected)


@pytest.mark.jax
def test_the_after_call_example_fails_before_and_runs_after(tmp_path: Path) -> None:
    """The pickling moves out of the jitted function in `lab/steps.py` to after its call in
    `lab/run.py`, which reads the snapshot right after the call."""
    copy = tmp_path / "after_call"
    shutil.copytree(Path(__file__).parent.parent / "examples" / "after_call", copy)
    expected = "0.9242 [0.4621, 0.4621]\n1.5232 [0.7616, 0.7616]\n"
    fails_then_runs_fixed(copy, ["-m", "lab.run"], expected)


STEPS = """\
import pickle

import jax
import jax.numpy as jnp

SNAPSHOTS = []


@jax.jit
def _forward(x):
    h = jnp.tanh(x)
    SNAPSHOTS.append(pickle.dumps(h))
    return h.sum()
"""
RUN = """\
import jax.numpy as jnp

from lab.steps import _forward

total = _forward(jnp.ones(2))
"""


def after_call_project(tmp_path: Path, run: str) -> Path:
    (tmp_path / "lab").mkdir()
    (tmp_path / "lab" / "__init__.py").write_text("")
    (tmp_path / "lab" / "steps.py").write_text(STEPS)
    (tmp_path / "lab" / "run.py").write_text(run)
    return tmp_path


def test_a_host_effect_moves_after_the_calls_in_other_modules(tmp_path: Path) -> None:
    root = after_call_project(tmp_path, RUN)
    assert invoke("apply", "--unsafe-fixes", "--no-cache", str(root)).exit_code == 0
    steps = (root / "lab" / "steps.py").read_text()
    assert "import pickle" not in steps and "    return h.sum(), h\n" in steps
    assert (root / "lab" / "run.py").read_text() == (
        "import pickle\n\nimport jax\nimport jax.numpy as jnp\n\n"
        "from lab.steps import SNAPSHOTS, _forward\n\n"
        "total, h = _forward(jnp.ones(2))\n"
        "SNAPSHOTS.append(pickle.dumps(jax.device_get(h)))\n"
    )
    again = invoke("check", "--no-cache", str(root))
    assert again.exit_code == 0, again.output  # nothing left, nothing rewritten twice


def test_every_host_statement_of_the_function_moves_once_in_order(tmp_path: Path) -> None:
    """Two statements of the function, found apart: one extra output each, both after the
    call, in their order (not a tuple of the old outputs nested in a new one)."""
    root = after_call_project(tmp_path, RUN)
    steps = STEPS.replace(
        "    SNAPSHOTS.append(pickle.dumps(h))\n",
        "    SNAPSHOTS.append(pickle.dumps(h))\n    LAST.append(pickle.dumps(h + 1))\n",
    ).replace("SNAPSHOTS = []\n", "SNAPSHOTS = []\nLAST = []\n")
    (root / "lab" / "steps.py").write_text(steps)
    assert invoke("apply", "--unsafe-fixes", "--no-cache", str(root)).exit_code == 0
    fixed_steps = (root / "lab" / "steps.py").read_text()
    assert "pickle" not in fixed_steps and "    return h.sum(), h\n" in fixed_steps
    run = (root / "lab" / "run.py").read_text()
    assert run.endswith(
        "total, h = _forward(jnp.ones(2))\n"
        "SNAPSHOTS.append(pickle.dumps(jax.device_get(h)))\n"
        "LAST.append(pickle.dumps(jax.device_get(h + 1)))\n"
    )


def test_a_public_function_keeps_its_return_for_callers_outside_the_run(tmp_path: Path) -> None:
    """Code outside the run may import `forward`: its statement moves into a host callback,
    and no caller changes."""
    root = after_call_project(tmp_path, RUN.replace("_forward", "forward"))
    (root / "lab" / "steps.py").write_text(STEPS.replace("_forward", "forward"))
    assert invoke("apply", "--unsafe-fixes", "--no-cache", str(root)).exit_code == 0
    steps = (root / "lab" / "steps.py").read_text()
    assert "jax.debug.callback(" in steps and "    return h.sum()\n" in steps
    assert (root / "lab" / "run.py").read_text() == RUN.replace("_forward", "forward")


def test_a_call_site_that_cannot_move_leaves_the_effect_in_a_callback(tmp_path: Path) -> None:
    root = after_call_project(tmp_path, RUN.replace("total = _forward", "print(_forward"))
    (root / "lab" / "run.py").write_text((root / "lab" / "run.py").read_text() + ")\n")
    assert invoke("apply", "--unsafe-fixes", "--no-cache", str(root)).exit_code == 0
    assert "jax.debug.callback(" in (root / "lab" / "steps.py").read_text()
    assert (root / "lab" / "run.py").read_text().startswith("import jax.numpy as jnp\n")


def test_a_global_the_function_assigns_stays_in_its_module(tmp_path: Path) -> None:
    """`LAST = h` at another module's call site would bind that module's own name."""
    root = after_call_project(tmp_path, RUN)
    steps = STEPS.replace("SNAPSHOTS = []\n", "").replace(
        "    SNAPSHOTS.append(pickle.dumps(h))", "    global LAST\n    LAST = h"
    )
    (root / "lab" / "steps.py").write_text(steps)
    assert invoke("apply", "--unsafe-fixes", "--no-cache", str(root)).exit_code == 0
    assert "jax.debug.callback(" in (root / "lab" / "steps.py").read_text()
    assert (root / "lab" / "run.py").read_text() == RUN


@pytest.mark.parametrize(
    ("files", "findings"),
    [
        (
            {"pkg/enc.py": ENCODER, "pkg/use.py": caller("blob = encode(jnp.ones(2))")},
            ["pkg/enc.py:8 JF107"],
        ),
        (
            {"pkg/steps.py": STEPS, "pkg/run.py": RUN.replace("lab.", "pkg.")},
            ["pkg/steps.py:12 JF101"],  # the call site is a part of its fix, no finding
        ),
    ],
    ids=["serialized-return", "host-effect-after-call"],
)
def test_return_changes_read_back_from_the_cache_give_the_same_findings(
    tmp_path: Path, files: dict[str, str], findings: list[str]
) -> None:
    """A file whose facts change traces the run again from the other files' cached results:
    the functions whose return a fix changes come back from the cache with their details as
    they were made (tuples, hashed by the run), and their callers' findings with them."""
    files = {"pkg/__init__.py": "", "pkg/other.py": "A = 1\n", **files}
    root = tree(tmp_path / "src", files)
    cache = str(tmp_path / "cache")
    cold = invoke("check", "--cache-dir", cache, str(root))
    assert found(cold, root) == findings
    (root / "pkg" / "other.py").write_text("A = 1\n\n\ndef more():\n    return A\n")
    warm = invoke("check", "--cache-dir", cache, str(root))
    assert warm.stdout == invoke("check", "--no-cache", str(root)).stdout == cold.stdout


FOLLOWED = """\
import functools

import jax
from jax import lax

from pkg.io import save_blob, save_tag


def unrelated(x):
    return save_tag(x, "host")  # not traced: no call noted


def host_caller():
    return middle(1.0, "a")  # mentions `middle`, but untraced: not needed


def middle(x, tag):
    return save_blob(x, tag)


def outer(x):
    return middle(x, "outer")


@jax.jit
def step(x):
    return outer(x * 2)


def fanned(x, tag):
    return save_tag(tag, x)


def body(carry, x):
    save_tag(carry, x)
    return carry, x


def scanned(xs):
    return lax.scan(body, 0.0, xs)


fast = jax.jit(functools.partial(fanned, tag="fast"))


def entered(a, b):
    return save_blob(b, a)
"""


def test_followed_calls_are_the_same_with_and_without_the_slice() -> None:
    from jaxfix.rules.registry import all_rules
    from jaxfix.run.engine import check_text
    from jaxfix.run.options import Options

    options = Options(
        packages=("pkg",),
        follow=True,
        entries=(Entry("entered", positions=(1,)),),
    )
    calls = []
    for slicing in (True, False):
        facts = ModuleFacts()
        place = Place("pkg.train", "pkg")
        kwargs = {"options": options, "place": place, "facts": facts, "slicing": slicing}
        check_text(FOLLOWED, all_rules(), **kwargs)  # type: ignore[arg-type]
        calls.append(sorted(facts.calls_out, key=repr))
    assert calls[0] == calls[1]
    assert {(call.target, call.entry.positions) for call in calls[0]} == {
        ("pkg.io.save_blob", (0,)),  # from `middle`, traced through `outer` by `step`
        ("pkg.io.save_tag", (0, 1)),  # from the scan body
        ("pkg.io.save_tag", (1,)),  # from `fanned`, traced by `fast`
    }


@pytest.mark.xfail(
    strict=True,
    reason="the run's call graph has no edges inside a module: `save` reaches no anchor itself, "
    "so the traced call into it is not followed (giving it those edges also follows jax's "
    "`prefix_errors` into `str` of pytree metadata the analysis takes for traced)",
)
def test_a_helper_that_reaches_a_sink_through_its_own_module_is_traced(tmp_path: Path) -> None:
    writer = (
        "import pickle\n\nLOG = []\n\n\ndef _write(value):\n    LOG.append(pickle.dumps(value))\n"
    )
    root = tree(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/io.py": writer + "\n\ndef save(value):\n    _write(value)\n",
            "pkg/train.py": trainer("from pkg.io import save", "save(y)"),
        },
    )
    assert found(invoke("check", "--no-cache", str(root / "pkg")), root) == ["pkg/io.py:7 JF101"]


PUBLIC_STEPS = """\
import pickle

import jax
import jax.numpy as jnp
import numpy as np

OUT = "h.npy"
SNAPS = []


@jax.jit
def step(x):
    h = jnp.tanh(x)
    np.save(OUT, h)
    SNAPS.append(pickle.dumps(h))
    return h * 2
"""
PUBLIC_RUN = """\
import jax.numpy as jnp
import numpy as np

from pkg import steps

out = steps.step(jnp.ones(3))
print(out)
print(len(steps.SNAPS), np.load(steps.OUT))
"""


def public_steps_project(tmp_path: Path, steps: str = PUBLIC_STEPS) -> Path:
    return tree(tmp_path, {"pkg/__init__.py": "", "pkg/steps.py": steps, "run.py": PUBLIC_RUN})


def test_a_read_in_another_module_waits_for_the_callbacks_as_part_of_the_fix(
    tmp_path: Path,
) -> None:
    """`step` is public: its statements go to host callbacks, and the module that reads what
    they write right after the call waits first, once. That barrier is part of the fix of
    the findings in `steps.py` (its title says so), not a finding of its own."""
    root = public_steps_project(tmp_path)
    checked = invoke("check", "--no-cache", str(root))
    assert found(checked, root) == ["pkg/steps.py:14 JF101", "pkg/steps.py:15 JF101"]
    assert f"it also changes {root / 'run.py'}" in checked.stdout
    assert invoke("apply", "--unsafe-fixes", "--no-cache", str(root)).exit_code == 0
    assert (root / "pkg" / "steps.py").read_text().count("jax.debug.callback(") == 2
    run = (root / "run.py").read_text()
    assert run.count("jax.effects_barrier()") == 1
    assert "print(out)\njax.effects_barrier()\nprint(len(steps.SNAPS)" in run
    again = invoke("check", "--no-cache", str(root))
    assert again.exit_code == 0, again.output


def test_a_suppressed_finding_withholds_every_file_of_its_fix(tmp_path: Path) -> None:
    """The barrier in `run.py` belongs to the callbacks' fix: a suppression comment on one
    of the function's findings leaves `run.py` as it is."""
    steps = PUBLIC_STEPS.replace("np.save(OUT, h)", "np.save(OUT, h)  # jaxfix: ignore[JF101]")
    root = public_steps_project(tmp_path, steps)
    invoke("apply", "--unsafe-fixes", "--no-cache", str(root))
    assert (root / "run.py").read_text() == PUBLIC_RUN
    assert "jax.effects_barrier" not in (root / "pkg" / "steps.py").read_text()


@pytest.mark.parametrize(("answers", "waits"), [("y\nn\n", True), ("n\nn\n", False)])
def test_the_review_shows_and_applies_a_fix_with_its_parts_in_other_files(
    tmp_path: Path, answers: str, waits: bool
) -> None:
    """`apply -i` shows the barrier in `run.py` with the callback's fix in `steps.py`, and
    writes both when the fix is accepted, neither when it is declined."""
    root = public_steps_project(tmp_path)
    result = CliRunner().invoke(
        main, ["apply", "-i", "--unsafe-fixes", "--no-cache", str(root)], input=answers
    )
    first_offer = result.output.split("Apply this fix?")[0]
    assert f"+++ b/{root / 'run.py'}" in first_offer
    assert "+jax.effects_barrier()" in first_offer
    run = (root / "run.py").read_text()
    assert ("jax.effects_barrier()" in run) is waits
    assert ("jax.debug.callback(" in (root / "pkg" / "steps.py").read_text()) is waits


def test_a_suppressed_statement_keeps_the_call_sites_elsewhere_as_they_are(
    tmp_path: Path,
) -> None:
    """The after-call move of `_forward`'s statement is one fix over both files: suppressed
    in `steps.py`, `run.py` is not rewritten either."""
    root = after_call_project(tmp_path, RUN)
    steps = STEPS.replace(
        "SNAPSHOTS.append(pickle.dumps(h))", "SNAPSHOTS.append(pickle.dumps(h))  # noqa: JF101"
    )
    (root / "lab" / "steps.py").write_text(steps)
    invoke("apply", "--unsafe-fixes", "--no-cache", str(root))
    assert (root / "lab" / "run.py").read_text() == RUN
    assert (root / "lab" / "steps.py").read_text() == steps


@pytest.mark.parametrize(
    "files",
    [
        pytest.param(  # the list lives in a module of its own
            {
                "pkg/state.py": "VALUES = []\n",
                "pkg/steps.py": "import jax\nimport jax.numpy as jnp\n\nfrom pkg import state\n\n\n"
                "@jax.jit\ndef step(x):\n    state.VALUES.append(float(jnp.sum(x)))\n"
                "    return x\n",
                "main.py": "import jax.numpy as jnp\n\nfrom pkg import state, steps\n\n"
                "steps.step(jnp.ones(3))\nprint(state.VALUES)\n",
            },
            id="state-module",
        ),
        pytest.param(  # the list imported by name from a module of its own
            {
                "pkg/state.py": "VALUES = []\n",
                "pkg/steps.py": "import jax\nimport jax.numpy as jnp\n\n"
                "from pkg.state import VALUES\n\n\n@jax.jit\ndef step(x):\n"
                "    VALUES.append(float(jnp.sum(x)))\n    return x\n",
                "main.py": "import jax.numpy as jnp\n\nfrom pkg.state import VALUES\n"
                "from pkg.steps import step\n\nstep(jnp.ones(3))\nprint(VALUES)\n",
            },
            id="state-imported-by-name",
        ),
        pytest.param(  # the callback is in a scan body that a public function runs
            {
                "pkg/steps.py": "import jax\nimport jax.numpy as jnp\n\nLOG = []\n\n\n"
                "def _body(carry, x):\n    LOG.append(float(jnp.sum(x)))\n    return carry, x\n\n\n"
                "def step(xs):\n    return jax.lax.scan(_body, 0.0, xs)[1]\n",
                "main.py": "import jax.numpy as jnp\n\nfrom pkg import steps\n\n"
                "steps.step(jnp.ones((2, 3)))\nprint(steps.LOG)\n",
            },
            id="scan-body",
        ),
        pytest.param(  # in a helper module that another module's jitted step calls
            {
                "pkg/helpers.py": 'import numpy as np\n\n\ndef save(v):\n    np.save("v.npy", v)\n',
                "pkg/steps.py": "import jax\n\nfrom pkg import helpers\n\n\n@jax.jit\n"
                "def step(x):\n    helpers.save(x)\n    return x\n",
                "main.py": "import jax.numpy as jnp\nimport numpy as np\n\n"
                'from pkg import steps\n\nsteps.step(jnp.ones(3))\nprint(np.load("v.npy"))\n',
            },
            id="helper-module",
        ),
    ],
)
def test_the_reader_waits_for_callbacks_its_call_runs_through_other_modules(
    tmp_path: Path, files: dict[str, str]
) -> None:
    """Found by `scripts/fuzz_effects.py`: `main.py` reads, right after its call, what a host
    callback the fix makes writes, through another module's state, a function that runs the
    callback's function, or a module in between: it waits first."""
    root = tree(tmp_path, {"pkg/__init__.py": "", **files})
    invoke("apply", "--unsafe-fixes", "--no-cache", str(root))
    main = (root / "main.py").read_text()
    assert main.count("jax.effects_barrier()") == 1
    assert main.index("jax.effects_barrier()") < main.index("print(")


def test_a_move_the_callers_refuse_becomes_callbacks_they_wait_for(tmp_path: Path) -> None:
    """`_step`'s statement cannot move after the call in `main.py` (its `f` means another
    thing there): it goes to a host callback, and `main.py`, told of that only after the
    verdict, still waits before its read (found by `scripts/fuzz_effects.py`)."""
    steps = (
        "import pickle\n\nimport jax\nimport jax.numpy as jnp\n\n\n@jax.jit\ndef _step(x):\n"
        '    h = jnp.tanh(x)\n    with open("h0.pkl", "wb") as f:\n        pickle.dump(h, f)\n'
        "    return h * 2\n"
    )
    main = (
        "import pickle\n\nimport jax.numpy as jnp\n\nfrom pkg import steps\n\n"
        'steps._step(jnp.ones(3))\nwith open("h0.pkl", "rb") as f:\n    print(pickle.load(f))\n'
    )
    root = tree(tmp_path, {"pkg/__init__.py": "", "pkg/steps.py": steps, "main.py": main})
    invoke("apply", "--unsafe-fixes", "--no-cache", str(root))
    assert "jax.debug.callback(" in (root / "pkg" / "steps.py").read_text()
    assert (
        "steps._step(jnp.ones(3))\njax.effects_barrier()\nwith open"
        in (root / "main.py").read_text()
    )


def test_a_suppressed_callback_withholds_the_waits_of_the_functions_that_run_it(
    tmp_path: Path,
) -> None:
    """The statement of a private scan body is suppressed: `main.py`, which calls the public
    function that scans it, gets no barrier for a callback that will not be there."""
    steps = (
        "import jax\nimport jax.numpy as jnp\n\nLOG = []\n\n\ndef _body(carry, x):\n"
        "    LOG.append(float(jnp.sum(x)))  # jaxfix: ignore[JF104]\n    return carry, x\n\n\n"
        "def step(xs):\n    return jax.lax.scan(_body, 0.0, xs)[1]\n"
    )
    main = (
        "import jax.numpy as jnp\n\nfrom pkg.steps import LOG, step\n\n"
        "step(jnp.ones((2, 3)))\nprint(LOG)\n"
    )
    root = tree(tmp_path, {"pkg/__init__.py": "", "pkg/steps.py": steps, "main.py": main})
    invoke("apply", "--unsafe-fixes", "--no-cache", str(root))
    assert (root / "main.py").read_text() == main
    assert (root / "pkg" / "steps.py").read_text() == steps


HELPER_LOGS = """\
import logging

logger = logging.getLogger(__name__)


def log_value(value):
    logger.info("s %s", value)
"""
STEP_LOGS = """\
import jax
import jax.numpy as jnp

from pkg.helpers import log_value


@jax.jit
def step(x):
    log_value(jnp.sum(x))
    return x * 2
"""


@pytest.mark.parametrize(
    ("host", "fixed"),
    [
        ("out = step(x)\nprint(out)\n", "out = step(x)\njax.effects_barrier()\nprint(out)\n"),
        ("print(step(x))\n", None),  # no place for a barrier between the call and the print
    ],
    ids=["print-after-the-call", "print-of-the-call"],
)
def test_a_module_that_prints_after_a_call_waits_for_the_lines_its_callbacks_log(
    tmp_path: Path, host: str, fixed: str | None
) -> None:
    """`log_value` is public: its log line goes to a host callback, which on an accelerator
    runs after the call returns. The module that prints after the call waits first, so that
    its line comes after the logged one, as when nothing was traced."""
    main = f"import jax.numpy as jnp\n\nfrom pkg.steps import step\n\nx = jnp.ones(3)\n{host}"
    files = {"pkg/__init__.py": "", "pkg/helpers.py": HELPER_LOGS, "pkg/steps.py": STEP_LOGS}
    root = tree(tmp_path, {**files, "main.py": main})
    invoke("apply", "--unsafe-fixes", "--no-cache", str(root))
    helpers = (root / "pkg" / "helpers.py").read_text()
    assert ("jax.debug.callback(" in helpers) is (fixed is not None)
    assert (root / "main.py").read_text().endswith(fixed or main)


@pytest.mark.parametrize(
    ("imports", "store"),
    [
        ("from pkg import state", 'state.STATE["last"] = s'),
        ("from pkg.state import STATE", 'STATE["last"] = s'),
        ("from pkg import state", "state.VALUES.append(s)"),
        ("from pkg.state import VALUES", "VALUES.append(s)"),
    ],
    ids=["module-item", "name-item", "module-append", "name-append"],
)
def test_a_store_into_another_modules_object_is_a_leak_moved_after_the_call(
    tmp_path: Path, imports: str, store: str
) -> None:
    """An object another module of the run keeps at module level outlives the trace: a
    traced value stored there leaks, and the store moves after the call, where `main.py`
    reads it."""
    static = store.replace("= s", "= x.shape[0]").replace("(s)", "(x.shape[0])")
    steps = (
        f"import jax\nimport jax.numpy as jnp\n\n{imports}\n\n\n@jax.jit\ndef _step(x):\n"
        f"    s = jnp.sum(x)\n    {store}\n    {static}\n    return x * 2\n"
    )
    main = "import jax.numpy as jnp\n\nfrom pkg import state, steps\n\nsteps._step(jnp.ones(3))\n"
    state = "STATE = {}\nVALUES = []\n"
    files = {"pkg/__init__.py": "", "pkg/state.py": state, "pkg/steps.py": steps}
    root = tree(tmp_path, {**files, "main.py": main})
    checked = invoke("check", "--no-cache", str(root))
    assert found(checked, root) == ["pkg/steps.py:10 JF103"]  # not the static `n`
    invoke("apply", "--unsafe-fixes", "--no-cache", str(root))
    assert store in (root / "main.py").read_text()
    assert store not in (root / "pkg" / "steps.py").read_text()


def test_a_module_that_prints_after_a_call_waits_for_the_steps_debug_print(
    tmp_path: Path,
) -> None:
    """`print` in the jitted step becomes `jax.debug.print`, which prints when the compiled
    step runs: `main.py` waits before its own print after the call, as a part of that fix."""
    steps = (
        "import jax\nimport jax.numpy as jnp\n\n\n@jax.jit\ndef step(x):\n"
        '    print(f"sum {jnp.sum(x):.2f}")\n    return x * 2\n'
    )
    main = "import jax.numpy as jnp\n\nfrom pkg.steps import step\n\nout = step(jnp.ones(3))\n"
    root = tree(
        tmp_path, {"pkg/__init__.py": "", "pkg/steps.py": steps, "main.py": main + "print(out)\n"}
    )
    invoke("apply", "--unsafe-fixes", "--no-cache", str(root))
    assert (
        'jax.debug.print("sum {:.2f}", jnp.sum(x), ordered=True)'
        in (root / "pkg" / "steps.py").read_text()
    )
    assert (root / "main.py").read_text().endswith("jax.effects_barrier()\nprint(out)\n")


RESAMPLER = """\
import jax.numpy as jnp


def resample(weights, count=None):
    if count is None:
        count = int(jnp.exp(weights).sum())
    return jnp.arange(count)
"""


@pytest.mark.parametrize(
    ("declared", "expected"),
    [
        ("count: int", []),
        ("count: int | None", ["pkg/util.py:6 JF104"]),
        ("count", ["pkg/util.py:6 JF104"]),
    ],
    ids=["declared-int", "declared-optional", "undeclared"],
)
def test_a_value_another_module_gives_that_is_not_none_decides_an_is_none_branch(
    tmp_path: Path, declared: str, expected: list[str]
) -> None:
    """jaxns `_resample(..., num_samples: int)` gives `S=num_samples` to `random_utils`'
    `resample_indicies`, whose `if S is None:` branch converts a tracer."""
    caller = f"""\
        from functools import partial

        import jax

        from pkg.util import resample


        @partial(jax.jit, static_argnums=1)
        def run(weights, {declared}):
            return resample(weights, count=count)
        """
    root = tree(tmp_path, {"pkg/__init__.py": "", "pkg/util.py": RESAMPLER, "pkg/run.py": caller})
    assert found(invoke("check", "--no-cache", str(root)), root) == expected
    # Another caller that leaves `count` to its default None: the branch runs for it.
    leaves = "\n\n@jax.jit\ndef plain(weights):\n    return resample(weights)\n"
    (root / "pkg/run.py").write_text(textwrap.dedent(caller) + leaves)
    assert found(invoke("check", "--no-cache", str(root)), root) == ["pkg/util.py:6 JF104"]
