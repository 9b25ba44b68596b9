"""The engine's guarantees: fixes that break the code or never converge are refused, overlapping
fixes are applied one pass at a time, imports are added and removed through LibCST."""

from __future__ import annotations

import textwrap
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import libcst as cst
import pytest

from jaxfix.analysis.firstpass import InvalidSource
from jaxfix.models.diagnostic import MESSAGE_LIMIT, FixSafety
from jaxfix.models.edits import apply_edits
from jaxfix.proofs.cases import Case, load_cases
from jaxfix.rules.registry import all_rules
from jaxfix.rules.rule import Rule
from jaxfix.run import cst_run
from jaxfix.run.engine import MAX_FIX_PASSES, FixError, applicable_rules, check_text, fix_text
from jaxfix.run.job import Job
from jaxfix.run.options import Options
from jaxfix.run.runner import run
from jaxfix.run.sourcefile import read_source
from tests.memo import checked

RULES = all_rules()


class _RenameEveryX(Rule):
    """Reports every `x` in traced code and "fixes" it into `x` again: never converges."""

    code = "JF901"
    name = "test-rename"
    message = "x"
    fix_title = "Rename"
    fix_safety = FixSafety.SAFE
    anchors = frozenset()

    def visit_Name(self, node: cst.Name) -> None:
        if node.value == "x" and self.traced.context_of(node) is not None:
            self.report(node, fix=self.make_fix({node: cst.Name("x")}))


class _ReturnAtTopLevel(Rule):
    """Replaces the module's first statement with `return`: code that does not compile."""

    code = "JF902"
    name = "test-break"
    message = "m"
    fix_title = "Break"
    fix_safety = FixSafety.SAFE
    anchors = frozenset()

    def visit_Module(self, node: cst.Module) -> None:
        first = node.body[0]
        self.report(first, fix=self.make_fix({first: cst.SimpleStatementLine([cst.Return()])}))


TRACED = textwrap.dedent("""\
    import jax

    @jax.jit
    def f(x):
        return x
    """)


def test_non_converging_fix_is_refused() -> None:
    expected = f"fixes for JF901 did not converge after {MAX_FIX_PASSES} passes"
    with pytest.raises(FixError, match=expected):
        fix_text(TRACED, [_RenameEveryX])


def test_fix_producing_invalid_code_is_refused_with_the_rule_code() -> None:
    with pytest.raises(FixError, match="fix for JF902 produced invalid code"):
        fix_text(TRACED, [_ReturnAtTopLevel])


@pytest.mark.parametrize(
    ("rule", "problem"),
    [
        (_RenameEveryX, f"fixes for JF901 did not converge after {MAX_FIX_PASSES} passes"),
        (_ReturnAtTopLevel, "fix for JF902 produced invalid code: 'return' outside function"),
    ],
)
def test_a_broken_fix_is_an_internal_error_and_nothing_is_written(
    tmp_path: Path, rule: type[Rule], problem: str
) -> None:
    path = tmp_path / "step.py"
    path.write_text(TRACED, encoding="utf-8")
    job = Job(fix=True, unsafe_fixes=True)
    outcome = run(read_source(path), [rule], job, display="step.py")
    assert outcome.error is not None
    assert outcome.error.startswith(f"step.py: internal error: {problem}")
    assert outcome.error.endswith("; the file is left unchanged")
    assert outcome.new_text is None
    assert path.read_text(encoding="utf-8") == TRACED


@pytest.mark.parametrize(
    "text", ["import pickle\npickle.dumps(\n", "import jax, pickle\npickle.dumps(\n"]
)
def test_a_syntax_error_is_reported_whether_or_not_a_rule_could_fire(text: str) -> None:
    # The prefilter skips the analysis of a file that never mentions jax, not its syntax check.
    with pytest.raises(InvalidSource, match=r"'\(' was never closed"):
        check_text(text, RULES)
    with pytest.raises(InvalidSource, match=r"'\(' was never closed"):
        fix_text(text, RULES)


def test_two_statements_writing_the_same_state_move_into_one_host_function() -> None:
    source = textwrap.dedent("""\
        import pickle
        import jax

        OUT = []

        @jax.jit
        def f(x):
            OUT.append(pickle.dumps(x))
            OUT.append(pickle.dumps(x + 1))
            return x
        """)
    fixed = fix_text(source, RULES, unsafe_fixes=True)
    assert len(fixed.fixed) == 2
    assert fixed.text.count("jax.debug.callback(") == 1
    assert "def _host_pickle_dumps(x):" in fixed.text
    assert check_text(fixed.text, RULES) == []


def test_two_statements_writing_apart_get_distinct_host_functions_and_one_barrier() -> None:
    source = textwrap.dedent("""\
        import pickle
        import jax

        OUT = []
        LOG = []

        @jax.jit
        def f(x):
            OUT.append(pickle.dumps(x))
            LOG.append(pickle.dumps(x + 1))
            return x

        f(1.0)
        print(len(OUT))
        print(len(LOG))
        """)
    fixed = fix_text(source, RULES, unsafe_fixes=True)
    assert len(fixed.fixed) == 2
    assert "def _host_pickle_dumps(x):" in fixed.text
    assert "def _host_pickle_dumps_2(x):" in fixed.text
    assert fixed.text.count("jax.effects_barrier()") == 1
    assert "jax.effects_barrier()\nprint(len(OUT))" in fixed.text
    assert check_text(fixed.text, RULES) == []


def test_hoist_adds_import_jax_when_only_names_from_jax_are_imported() -> None:
    source = textwrap.dedent("""\
        import pickle
        from jax import jit

        OUT = []

        @jit
        def f(x):
            OUT.append(pickle.dumps(x))
            return x
        """)
    fixed = fix_text(source, RULES, unsafe_fixes=True).text
    assert fixed.startswith("import pickle\nimport jax\nfrom jax import jit\n")
    assert "jax.debug.callback(_host_pickle_dumps, x, ordered=True)" in fixed


def test_hoist_uses_the_alias_jax_is_imported_under() -> None:
    source = textwrap.dedent("""\
        import pickle
        import jax as J

        OUT = []

        @J.jit
        def f(x):
            OUT.append(pickle.dumps(x))
            return x
        """)
    fixed = fix_text(source, RULES, unsafe_fixes=True).text
    assert "J.debug.callback(_host_pickle_dumps, x, ordered=True)" in fixed
    assert "pickle.dumps(J.device_get(x))" in fixed
    assert "import jax\n" not in fixed


def test_no_hoist_when_the_name_jax_means_something_else() -> None:
    source = textwrap.dedent("""\
        import pickle
        from jax import jit

        OUT = []
        jax = "not the module"

        @jit
        def f(x):
            OUT.append(pickle.dumps(x))
            return x
        """)
    result = fix_text(source, RULES, unsafe_fixes=True)
    assert result.text == source
    assert [d.code for d in result.diagnostics] == ["JF101"]
    assert result.diagnostics[0].fix is None


def test_unsafe_fixes_are_not_applied_by_default() -> None:
    source = textwrap.dedent("""\
        import pickle
        import jax

        OUT = []

        @jax.jit
        def f(x):
            OUT.append(pickle.dumps(x))
            return x
        """)
    result = fix_text(source, RULES)
    assert result.text == source
    assert result.diagnostics[0].fix is not None
    assert result.diagnostics[0].fix.safety is FixSafety.UNSAFE


def test_a_file_no_fix_applies_to_comes_back_as_it_was_to_its_last_blank() -> None:
    """LibCST's code of a module drops the blank lines at its end: a file with findings and no
    allowed fix is not LibCST's code of it."""
    source = TRACED.replace("return x", "OUT.append(x)\n    return x") + "\n\n \n "
    source = "OUT = []\n" + source
    result = fix_text(source, RULES)
    assert [d.code for d in result.diagnostics] == ["JF103"] and not result.fixed
    assert result.text == source


def test_cache_removal_keeps_an_import_still_in_use() -> None:
    source = textwrap.dedent("""\
        import functools

        import jax

        @functools.cache
        def table(n):
            return tuple(range(n))

        @functools.lru_cache
        @jax.jit
        def f(x):
            return x * len(table(3))
        """)
    fixed = fix_text(source, RULES).text
    assert fixed == source.replace("@functools.lru_cache\n", "")


def test_cache_with_cache_api_use_is_reported_without_fix() -> None:
    source = textwrap.dedent("""\
        import functools

        import jax

        @functools.lru_cache
        @jax.jit
        def f(x):
            return x

        f.cache_clear()
        """)
    (diagnostic,) = check_text(source, RULES)
    assert diagnostic.fix is None
    assert "cache's API" in diagnostic.message


def test_line_inside_a_with_block_that_cannot_move_whole_is_not_hoisted() -> None:
    # Hoisting only the dump would write to `f` after the block closed it.
    source = textwrap.dedent("""\
        import pickle
        import jax

        @jax.jit
        def f(x):
            with open("out.pkl", "wb") as fh:
                pickle.dump(x, fh)
                y = x + 1
            return y
        """)
    (diagnostic,) = check_text(source, RULES)
    assert diagnostic.fix is None


def test_item_of_a_container_built_in_the_trace_is_not_host_state() -> None:
    source = textwrap.dedent("""\
        import pickle
        import jax

        @jax.jit
        def f(x):
            out = {}
            out["blob"] = pickle.dumps(x)
            return out
        """)
    (diagnostic,) = check_text(source, RULES)
    assert diagnostic.fix is None


TWO_RULES = textwrap.dedent("""\
    import functools
    import pickle

    import jax

    BLOBS = []


    @functools.lru_cache
    @jax.jit
    def f(x):
        return x + 1


    @jax.jit
    def g(x):
        BLOBS.append(pickle.dumps(x))
        return x
    """)


def test_edits_of_each_finding_are_that_fix_alone() -> None:
    diagnostics = check_text(TWO_RULES, RULES, edits=True)
    assert [d.code for d in diagnostics] == ["JF102", "JF101"]
    for diagnostic in diagnostics:
        rule = [r for r in RULES if r.code == diagnostic.code]
        alone = fix_text(TWO_RULES, rule, unsafe_fixes=True).text
        assert alone != TWO_RULES
        assert apply_edits(TWO_RULES, diagnostic.edits) == alone
    assert check_text(TWO_RULES, RULES) == [replace(d, edits=()) for d in diagnostics]


def test_user_declared_transform_traces_like_jit() -> None:
    source = TWO_RULES.replace("@jax.jit\ndef g", "@my_lib.compiled\ndef g").replace(
        "import jax\n", "import jax\nimport my_lib\n"
    )
    assert [d.code for d in check_text(source, RULES)] == ["JF102"]
    options = Options(transforms=("my_lib.compiled",))
    found = check_text(source, RULES, options=options)
    assert [d.code for d in found] == ["JF102", "JF101"]
    assert "decorated with `my_lib.compiled`" in found[1].message


def test_unfixable_rules_keep_their_findings_but_lose_their_fix() -> None:
    options = Options(unfixable=("cache-on-traced",))
    found = check_text(TWO_RULES, RULES, options=options, edits=True)
    assert [(d.code, d.fix_safety, bool(d.edits)) for d in found] == [
        ("JF102", None, False),
        ("JF101", FixSafety.UNSAFE, True),
    ]
    result = fix_text(TWO_RULES, RULES, unsafe_fixes=True, options=options)
    assert "@functools.lru_cache" in result.text
    assert [d.code for d in result.fixed] == ["JF101"]


ALIASED = textwrap.dedent("""\
    import pickle

    import jax

    compiled = jax.jit
    dumps = pickle.dumps
    BLOBS = []


    @compiled
    def step(x):
        BLOBS.append(dumps(x))
        return x
    """)


def test_names_bound_to_an_import_are_followed_and_the_slice_keeps_them() -> None:
    found = check_text(ALIASED, RULES)
    assert [(d.code, d.line) for d in found] == [("JF101", 12)]
    assert found == check_text(ALIASED, RULES, slicing=False)
    fixed = fix_text(ALIASED, RULES, unsafe_fixes=True).text
    assert "jax.debug.callback(_host_dumps, x, ordered=True)" in fixed
    assert check_text(fixed, RULES) == []


@pytest.mark.parametrize("case", load_cases(), ids=lambda case: case.id)
def test_edits_from_the_slice_are_those_of_the_whole_file(case: Case) -> None:
    text = case.before.read_text(encoding="utf-8")
    assert checked(text, RULES, edits=True) == check_text(text, RULES, edits=True, slicing=False)


@pytest.mark.parametrize("case", load_cases(), ids=lambda case: case.id)
def test_edits_asked_for_one_line_are_those_of_that_finding(case: Case) -> None:
    text = case.before.read_text(encoding="utf-8")
    every = checked(text, RULES, edits=True)
    for line in {d.line for d in every if d.edits}:
        some = check_text(text, RULES, edits=frozenset({line}))
        assert some == [d for d in every if d.line == line]
    assert check_text(text, RULES, edits=frozenset()) == [replace(d, edits=()) for d in every]


UNRELATED_READ = textwrap.dedent("""\
    import jax
    import numpy as np

    LOG = []


    @jax.jit
    def f(i):
        LOG.append(np.asarray(i))
        return i


    f(2)
    print(LOG)
""")


def test_a_wait_the_slice_leaves_out_makes_the_engine_read_the_whole_file(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A hoist must wait before `print(LOG)`, which a slice without the script leaves out: the
    analysis of the slice says so (the slice's last line is no line after it), and the engine
    analyses the whole file instead of giving up the fix."""
    rule = next(rule for rule in RULES if rule.code == "JF104")
    monkeypatch.setattr(rule, "reads_after_calls", False)  # the slice then ends at `f(2)`
    found = check_text(UNRELATED_READ, RULES, edits=True)
    assert found == check_text(UNRELATED_READ, RULES, edits=True, slicing=False)
    assert [d.fix_title and d.fix_title.endswith("before the read at line 14") for d in found] == [
        True
    ]


_SIN = "\n\n@jax.jit\ndef f(x):\n    return np.sin(x)\n"


@pytest.mark.parametrize(
    ("top", "fixed_top"),
    [
        # The last import of a block: the blank line before the code stays.
        ("import jax\nimport numpy as np\n\nX = 1\n", "import jax\n\nX = 1\n"),
        # The first import of the file, or after the docstring: the next one takes its place.
        ("import numpy as np\n\nimport jax\n", "import jax\n"),
        ('"""Doc."""\nimport numpy as np\n\nimport jax\n', '"""Doc."""\nimport jax\n'),
        # The blank line above a removed import stays above what follows it.
        ('"""Doc."""\n\nimport numpy as np\nimport jax\n', '"""Doc."""\n\nimport jax\n'),
        ("import jax\n\nimport numpy as np\nX = 1\n", "import jax\n\nX = 1\n"),
    ],
    ids=["last-of-block", "first", "first-after-docstring", "blank-above", "blank-above-code"],
)
def test_a_removed_import_leaves_the_blank_lines_a_person_would(top: str, fixed_top: str) -> None:
    fixed = fix_text(top + _SIN, RULES, unsafe_fixes=True).text
    assert fixed == fixed_top + _SIN.replace("np.sin", "jax.numpy.sin")


FAR_USE = textwrap.dedent("""\
    \"\"\"A cache removed from a jitted function while `functools` is still used far below.\"\"\"
    import functools
    import pickle

    import jax


    @functools.lru_cache
    @jax.jit
    def f(x):
        return x + 1


    def unrelated():
        return 3


    @jax.jit
    def g(x):
        pickle.dumps(x)
        return x


    WRAPS = functools.wraps
    """)


@pytest.mark.parametrize("keep_use", [True, False])
def test_sliced_edits_remove_an_import_only_when_nothing_else_uses_it(keep_use: bool) -> None:
    text = FAR_USE if keep_use else FAR_USE.replace("WRAPS = functools.wraps\n", "")
    (cache, _) = check_text(text, RULES, edits=True)
    fixed = apply_edits(text, cache.edits)
    assert fixed == fix_text(text, [r for r in RULES if r.code == "JF102"]).text
    assert ("import functools" in fixed) is keep_use


def test_a_file_that_only_names_a_project_transform_is_analysed() -> None:
    text = (
        "import pickle\nfrom my_lib import compiled\n\nLOG = []\n\n\n"
        "@compiled\ndef step(x):\n    LOG.append(pickle.dumps(x))\n    return x\n"
    )
    options = Options(transforms=("my_lib.compiled",))
    assert [d.code for d in check_text(text, all_rules(), options=options)] == ["JF101"]
    assert check_text(text, all_rules()) == []


def test_a_store_alone_passes_the_text_prefilter_of_a_stores_rule() -> None:
    """No word of the file is an anchor's name: the STORES anchor still has it analysed."""
    text = "import jax\nLAST = {}\n\n\n@jax.jit\ndef f(x):\n    LAST['x'] = x * 2\n    return x\n"
    found = check_text(text, RULES)
    assert [d.code for d in found] == ["JF103"]
    assert check_text(text, RULES, slicing=False) == found


@pytest.mark.parametrize(
    ("text", "code", "runs"),
    [
        ("import jax\nfrom multiprocessing import Pool\n", "JF105", True),
        ("import jax\nclass MaxPool:\n    pass\n", "JF105", False),  # a longer name
        ("import jax\nblob = pickle.dumps\n", "JF101", True),
        ("import jax\n# dumpster\n", "JF101", False),
        ("import jax\nmemo = collections.defaultdict(list)\n", "JF106", True),  # a fragment
        ("import jax\nf = jax.jit(g, static_argnames='n')\n", "JF106", True),
        ("import jax\nx = 1\n", "JF106", False),
        ("import jax\nblob = pickle.dumps_all\n", "JF101", False),  # a word goes on after `_`
        ("import jax\nblob = pickle.dumpsé\n", "JF101", True),  # a non-ASCII letter ends it
        ("import jax\nblob = pickle.dumps  # é\n", "JF101", True),
    ],
)
def test_a_rule_runs_where_the_text_names_one_of_its_anchors(
    text: str, code: str, runs: bool
) -> None:
    assert (code in {rule.code for rule in applicable_rules(text, all_rules())}) is runs


# Host effects after the call (`jaxfix.fixes.after_call`), or else in a host callback.

AFTER_CALL = """\
import pickle

import jax
import jax.numpy as jnp

BLOBS = []


@jax.jit
def _step(x, scale):
    h = jnp.tanh(x)
    BLOBS.append(pickle.dumps(h))
    return h * 2


out = _step(jnp.ones(2), 2.0)
"""
CALLBACK = "Move the serialization to a host callback"
AFTER = "Return the traced values and"  # ... serialize / run the statement ... after each call


@pytest.mark.parametrize(
    ("change", "title"),
    [
        pytest.param(("", ""), AFTER, id="private function, every call site a statement"),
        pytest.param(("def _step", "def step"), CALLBACK, id="public: other modules may call it"),
        pytest.param(
            ("out = _step(jnp.ones(2), 2.0)", "print(_step(jnp.ones(2), 2.0))"),
            CALLBACK,
            id="a call site inside an expression",
        ),
        pytest.param(
            (
                "    BLOBS.append(pickle.dumps(h))",
                '    tag = "act"\n    BLOBS.append((tag, pickle.dumps(h)))',
            ),
            CALLBACK,
            id="it reads a local Python value that the call site does not have",
        ),
        pytest.param(
            ("    return h * 2", "    h = h + 1\n    return h * 2"),
            CALLBACK,
            id="the value it needs is bound again after it",
        ),
        pytest.param(
            (
                "    BLOBS.append(pickle.dumps(h))",
                "    if True:\n        BLOBS.append(pickle.dumps(h))",
            ),
            CALLBACK,
            id="it runs in a branch",
        ),
        pytest.param(("@jax.jit\n", "@jax.vmap\n"), CALLBACK, id="traced by vmap, not jit"),
    ],
)
def test_an_effect_moves_after_the_call_only_where_that_means_the_same(
    change: tuple[str, str], title: str
) -> None:
    (found,) = check_text(AFTER_CALL.replace(*change), RULES)
    assert found.fix_title is not None and found.fix_title.startswith(title)


def test_an_effect_after_the_call_runs_on_the_host_copy_at_every_call_site() -> None:
    fixed = fix_text(AFTER_CALL + "_step(jnp.zeros(2), 1.0)\n", RULES, unsafe_fixes=True).text
    assert "    return h * 2, h\n" in fixed
    assert fixed.endswith(
        "out, h = _step(jnp.ones(2), 2.0)\n"
        "BLOBS.append(pickle.dumps(jax.device_get(h)))\n"
        "_, h = _step(jnp.zeros(2), 1.0)\n"
        "BLOBS.append(pickle.dumps(jax.device_get(h)))\n"
    )


GLOBAL_STORE = """\
import jax
import jax.numpy as jnp

LAST = None


@jax.jit
def _step(x):
    global LAST
    LAST = jnp.tanh(x)
    return x + 1


"""


@pytest.mark.parametrize(
    ("site", "title"),
    [
        pytest.param("out = _step(jnp.ones(2))\n", AFTER, id="at the module level"),
        pytest.param(
            "def main():\n    out = _step(jnp.ones(2))\n",
            "Move the statement to a host callback",
            id="in a function, where `LAST = ...` would bind a local",
        ),
    ],
)
def test_a_global_assigned_after_the_call_stays_the_modules(site: str, title: str) -> None:
    (found,) = check_text(GLOBAL_STORE + site, RULES)
    assert found.fix_title is not None and found.fix_title.startswith(title)


GRAD_AFTER_CALL = """\
import pickle

import jax
import jax.numpy as jnp

BLOBS = []


def _loss(w, x):
    h = jnp.tanh(w * x)
    BLOBS.append(pickle.dumps(h))
    return jnp.sum(h)


g = jax.grad(_loss)(jnp.ones(2), 2.0)
"""


@pytest.mark.parametrize(
    ("change", "title"),
    [
        pytest.param(("", ""), AFTER, id="private loss, every gradient taken at once"),
        pytest.param(
            ("g = jax.grad(_loss)(", "v, g = jax.value_and_grad(_loss)("),
            AFTER,
            id="value_and_grad unpacked as value, grad",
        ),
        pytest.param(("_loss", "loss"), CALLBACK, id="public: other modules may call it"),
        pytest.param(
            ("g = jax.grad(_loss)(", "vg = jax.value_and_grad(_loss)("),
            CALLBACK,
            id="value_and_grad's pair kept whole",
        ),
        pytest.param(
            ("g = jax.grad(_loss)(jnp.ones(2), 2.0)", "grad_fn = jax.grad(_loss)"),
            CALLBACK,
            id="the gradient kept as a function",
        ),
        pytest.param(
            ("jax.grad(_loss)(", "jax.grad(_loss, has_aux=False)("),
            CALLBACK,
            id="has_aux given already",
        ),
        pytest.param(
            ("g = jax.grad(_loss)(jnp.ones(2), 2.0)", "g = jax.jit(jax.grad(_loss))(1.0, 2.0)"),
            CALLBACK,
            id="the gradient taken in traced code",
        ),
        pytest.param(
            ("g = jax.grad(_loss)(", "g = jax.jacrev(_loss)("),
            CALLBACK,
            id="jacrev has auxiliary outputs too, but a different result",
        ),
    ],
)
def test_an_effect_under_grad_moves_after_the_call_as_auxiliary_output(
    change: tuple[str, str], title: str
) -> None:
    (found,) = check_text(GRAD_AFTER_CALL.replace(*change), RULES)
    assert found.fix_title is not None and found.fix_title.startswith(title)


@pytest.mark.parametrize(
    ("site", "rewritten"),
    [
        pytest.param(
            "g = jax.grad(_loss)(w, 2.0)",
            "g, h = jax.grad(_loss, has_aux=True)(w, 2.0)",
            id="grad",
        ),
        pytest.param(
            "jax.grad(_loss)(w, 2.0)",
            "_, h = jax.grad(_loss, has_aux=True)(w, 2.0)",
            id="grad, result dropped",
        ),
        pytest.param(
            "v, g = jax.value_and_grad(_loss)(w, 2.0)",
            "(v, h), g = jax.value_and_grad(_loss, has_aux=True)(w, 2.0)",
            id="value_and_grad",
        ),
        pytest.param(
            "jax.value_and_grad(_loss)(w, 2.0)",
            "(_, h), _ = jax.value_and_grad(_loss, has_aux=True)(w, 2.0)",
            id="value_and_grad, result dropped",
        ),
    ],
)
def test_the_gradient_call_returns_the_effect_values_as_auxiliary_output(
    site: str, rewritten: str
) -> None:
    text = GRAD_AFTER_CALL.replace("g = jax.grad(_loss)(jnp.ones(2), 2.0)", f"w = 1.0\n{site}")
    fixed = fix_text(text, RULES, unsafe_fixes=True).text
    assert "    return jnp.sum(h), h\n" in fixed
    assert fixed.endswith(f"{rewritten}\nBLOBS.append(pickle.dumps(jax.device_get(h)))\n")


def test_several_values_under_grad_are_one_auxiliary_tuple() -> None:
    text = GRAD_AFTER_CALL.replace(
        "BLOBS.append(pickle.dumps(h))", "BLOBS.append(pickle.dumps((h, w)))"
    )
    fixed = fix_text(text, RULES, unsafe_fixes=True).text
    assert "    return jnp.sum(h), (h, w)\n" in fixed
    assert "g, (h, w) = jax.grad(_loss, has_aux=True)(jnp.ones(2), 2.0)\n" in fixed


SCAN_AFTER_CALL = """\
import pickle

import jax
import jax.numpy as jnp
from jax import lax

BLOBS = []


def _body(c, x):
    h = jnp.tanh(c + x)
    BLOBS.append(pickle.dumps(h))
    return h, x * 2


c, ys = lax.scan(_body, 0.0, jnp.ones(3))
"""


@pytest.mark.parametrize(
    ("change", "title"),
    [
        pytest.param(("", ""), AFTER, id="private body, scanned forwards on the host"),
        pytest.param(("_body", "body"), CALLBACK, id="public: other modules may call it"),
        pytest.param(
            ("jnp.ones(3))", "jnp.ones(3), reverse=True)"), CALLBACK, id="scanned in reverse"
        ),
        pytest.param(
            ("jnp.ones(3))", "jnp.ones(3), 3, True)"),
            CALLBACK,
            id="scanned in reverse, positionally",
        ),
        pytest.param(("c, ys = lax", "out = lax"), CALLBACK, id="the result kept whole"),
        pytest.param(
            ("    return h, x * 2", "    out = h, x\n    return out"),
            CALLBACK,
            id="the body does not return a `carry, y` display",
        ),
        pytest.param(
            (
                "c, ys = lax.scan(_body, 0.0, jnp.ones(3))",
                "c, ys = jax.jit(lambda: lax.scan(_body, 0.0, jnp.ones(3)))()",
            ),
            CALLBACK,
            id="scanned in traced code",
        ),
    ],
)
def test_an_effect_in_a_scan_body_moves_after_the_scan_only_where_that_means_the_same(
    change: tuple[str, str], title: str
) -> None:
    (found,) = check_text(SCAN_AFTER_CALL.replace(*change), RULES)
    assert found.fix_title is not None and found.fix_title.startswith(title)


@pytest.mark.parametrize(
    ("site", "rewritten"),
    [
        pytest.param(
            "c, ys = lax.scan(_body, 0.0, jnp.ones(3))",
            "c, (ys, hs) = lax.scan(_body, 0.0, jnp.ones(3))",
            id="carry and ys",
        ),
        pytest.param(
            "lax.scan(_body, 0.0, jnp.ones(3))",
            "_, (_, hs) = lax.scan(_body, 0.0, jnp.ones(3))",
            id="result dropped",
        ),
    ],
)
def test_the_scan_stacks_the_effect_values_and_the_effect_runs_for_each(
    site: str, rewritten: str
) -> None:
    text = SCAN_AFTER_CALL.replace("c, ys = lax.scan(_body, 0.0, jnp.ones(3))", site)
    fixed = fix_text(text, RULES, unsafe_fixes=True).text
    assert "    return h, (x * 2, h)\n" in fixed
    assert fixed.endswith(
        f"{rewritten}\nfor h in hs:\n    BLOBS.append(pickle.dumps(jax.device_get(h)))\n"
    )


def test_several_values_of_a_scan_body_are_stacked_together_and_zipped() -> None:
    text = SCAN_AFTER_CALL.replace("pickle.dumps(h)", "pickle.dumps((h, x))")
    fixed = fix_text(text, RULES, unsafe_fixes=True).text
    assert "    return h, (x * 2, (h, x))\n" in fixed
    assert fixed.endswith(
        "c, (ys, (hs, xs)) = lax.scan(_body, 0.0, jnp.ones(3))\n"
        "for h, x in zip(hs, xs):\n"
        "    BLOBS.append(pickle.dumps(jax.device_get((h, x))))\n"
    )


def test_several_values_of_a_scan_body_need_the_builtin_zip() -> None:
    text = SCAN_AFTER_CALL.replace("pickle.dumps(h)", "pickle.dumps((h, x))")
    (found,) = check_text(text.replace("BLOBS = []\n", "BLOBS = []\nzip = None\n"), RULES)
    assert found.fix_title is not None and found.fix_title.startswith(CALLBACK)


def test_a_traced_value_for_a_static_argument_names_the_caller_to_make_static() -> None:
    fixtures = Path(__file__).parent / "fixtures" / "hash_in_traced"
    jitted = (fixtures / "static_argnums_inner_jit" / "before.py").read_text()
    (found,) = check_text(jitted, RULES)
    assert found.full_message.endswith(
        '(here: make `n` static where `twice` is jitted, `jax.jit(..., static_argnames="n")`)'
    )
    assert found.fix_title.startswith(
        "Make the parameter static in the jitted caller too: `n` where `twice` is jitted"
    )
    given = (fixtures / "lookalike_static_caller_given_a_variable" / "before.py").read_text()
    found, _ = check_text(given, RULES)
    assert (
        "no automatic fix: that changes what its callers may pass (an array fails there, each"
        " new value compiles again): the call of `kernel` on line 23 passes `order` a value"
        in found.full_message
    )
    vmapped = (fixtures / "static_argnames_assigned" / "before.py").read_text()
    (found,) = check_text(vmapped, RULES)
    assert "(here:" not in found.message  # under vmap the value is batched: nothing to make static
    assert "no automatic fix: the value is made from traced arrays" in found.full_message


@pytest.fixture
def no_kept_trees() -> Iterator[None]:
    cst_run._kept.by_text.clear()
    cst_run._kept.characters = 0
    yield
    cst_run._kept.by_text.clear()
    cst_run._kept.characters = 0


@pytest.mark.parametrize("case", load_cases()[::10], ids=lambda case: case.id)
def test_a_kept_tree_gives_what_a_fresh_parse_gives(case: Case, no_kept_trees: None) -> None:
    """The rules' run on a tree (and its metadata) kept from an earlier run, by another rule
    and without edits, finds and fixes what a run on a fresh parse does."""
    text = case.before.read_text(encoding="utf-8")
    fresh = check_text(text, RULES, edits=True, slicing=False)
    fresh_fix = fix_text(text, RULES, unsafe_fixes=True)
    cst_run._kept.by_text.clear()
    other = next(rule for rule in RULES if rule.__module__.rsplit(".", 1)[-1] != case.rule)
    check_text(text, [other], slicing=False)
    kept = cst_run.wrapped(text)
    assert check_text(text, RULES, edits=True, slicing=False) == fresh
    assert fix_text(text, RULES, unsafe_fixes=True) == fresh_fix
    assert cst_run.wrapped(text) is kept


def test_kept_trees_are_few_and_small(no_kept_trees: None) -> None:
    texts = [f"x = {i}\n" for i in range(cst_run.KEPT_TREES + 1)]
    first = cst_run.wrapped(texts[0])
    kept = [cst_run.wrapped(text) for text in texts[1:]]
    assert cst_run.wrapped(texts[-1]) is kept[-1]
    assert cst_run.wrapped(texts[1]) is kept[0]
    assert cst_run.wrapped(texts[0]) is not first  # the oldest went
    big = f"x = '{'a' * cst_run.KEPT_CHARACTERS}'\n"
    tree = cst_run.wrapped(big)
    assert cst_run.wrapped(big) is tree  # the last one stays, however large
    assert list(cst_run._kept.by_text) == [big]


def test_the_cache_fix_says_jit_caches_only_for_a_jitted_function() -> None:
    """`helper` is traced because a jitted step calls it: no jit of its own caches anything."""
    text = (
        "import functools\n\nimport jax\n\n\n@functools.lru_cache\ndef helper(x):\n"
        "    return x + 1\n\n\n@jax.jit\ndef step(x):\n    return helper(x)\n\n\n"
        "@functools.lru_cache\n@jax.jit\ndef f(x):\n    return x + 1\n"
    )
    titles = [(d.line, d.fix_title) for d in check_text(text, RULES) if d.code == "JF102"]
    assert titles == [
        (6, "Remove the cache decorator (a traced value cannot be a cache key)"),
        (16, "Remove the cache decorator (`jax.jit` already caches compiled code)"),
    ]


@pytest.mark.parametrize("code", ["JF104", "JF106"])
def test_a_rule_with_several_kinds_of_fix_titles_each_by_what_it_does(code: str) -> None:
    """The rule's `fix_title` lists every kind (the docs' table); a finding's names its own."""
    [rule] = [r for r in RULES if r.code == code]
    titles = [
        d.fix_title
        for case in load_cases()
        if case.rule == rule.name.replace("-", "_")
        for d in checked(case.before.read_text(), RULES)
        if d.code == code and d.fix_title
    ]
    assert len(titles) > 5
    assert not [t for t in titles if t.startswith(rule.fix_title)]


@pytest.mark.parametrize("case", load_cases(), ids=lambda case: case.id)
def test_every_message_is_at_most_160_characters(case: Case) -> None:
    """What is wrong and where; the advice and why there is no fix are the finding's note (and
    the rule's docs, `jaxfix explain`)."""
    for found in checked(case.before.read_text(), RULES):
        assert len(found.message) <= MESSAGE_LIMIT, found.message
        assert not found.note or len(found.message) + len(found.note) > MESSAGE_LIMIT
