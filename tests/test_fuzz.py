"""Property-based fuzzing of the engine and the rules.

Two sources of programs: Hypothesmith's grammar-derived programs (arbitrary Python, alone or
spliced into a JAX program), and `tests.jax_programs` (JAX-shaped programs made of the patterns
the rules target). For every program that LibCST parses:

- `check_text` and `fix_text` raise nothing (a `FixError` is a rule that built a bad fix, except
  on an input that does not compile in the first place, whose fixed text cannot compile either);
- analysing only the statements a rule can depend on (`slicing=True`, the default) finds exactly
  what analysing the whole file finds, with the same fixes offered;
- the fixed text compiles, a second `fix_text` changes nothing, and what the fix leaves is what
  `check_text` reports on the fixed text;
- a text without findings, or whose fixes were not applied, comes back byte-identical.

The examples per property are few by default so that the file runs in seconds (the inner
loop runs it), and always the same ones (`derandomize`): a CI run fails or passes on the code,
not on the draw. Set `JAXFIX_FUZZ_EXAMPLES=N` to run N JAX-shaped programs per property (and
the Hypothesmith properties in proportion). The random search is `scripts/fuzz_long.py`'s: the
same checks over many more programs, a new seed each run; a program it finds failing is kept
here as an `@example`.
"""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass
from pathlib import Path

import hypothesmith
import libcst as cst
import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st
from libcst.metadata import MetadataWrapper, ScopeProvider

from jaxfix.analysis.firstpass import InvalidSource
from jaxfix.models.diagnostic import FixSafety
from jaxfix.rules.registry import all_rules
from jaxfix.run.engine import FixError, Result, check_text, fix_text
from tests.jax_programs import indent, jax_programs

RULES = all_rules()
# Hypothesmith builds a Lark parser of the Python grammar for each `from_grammar()` (seconds):
# build it once, on the first draw, and share it.
GRAMMAR_PROGRAMS: st.SearchStrategy[str] = st.deferred(hypothesmith.from_grammar)
DEFAULT_JAX_EXAMPLES = 10
JAX_EXAMPLES = int(os.environ.get("JAXFIX_FUZZ_EXAMPLES", DEFAULT_JAX_EXAMPLES))


def fuzz_settings(default: int) -> settings:
    """`default` examples, scaled like the JAX-shaped properties by JAXFIX_FUZZ_EXAMPLES."""
    return settings(
        max_examples=max(1, default * JAX_EXAMPLES // DEFAULT_JAX_EXAMPLES),
        deadline=None,
        database=None,  # nothing written into the work tree; failures print their program
        derandomize=True,  # the same programs on every run (see the module docstring)
        suppress_health_check=[
            HealthCheck.too_slow,
            HealthCheck.filter_too_much,
            HealthCheck.data_too_large,
        ],
    )


class PropertyFailure(AssertionError):
    """A fuzzing property does not hold; `kind` names which one."""

    def __init__(self, kind: str, detail: str) -> None:
        super().__init__(f"{kind}: {detail}")
        self.kind = kind
        self.detail = detail


@dataclass(frozen=True)
class Outcome:
    """What checking one program found (when every property held)."""

    findings: int  # diagnostics check_text reported
    fixed: int  # fixes fix_text applied


def compiles(text: str) -> bool:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # invalid escape sequences and the like
        try:
            compile(text, "<fuzz>", "exec", dont_inherit=True)
        except (SyntaxError, ValueError):
            return False
    return True


def undefined_names(text: str) -> set[str]:
    """Names read in `text` that no assignment, import or builtin binds (where LibCST sees)."""
    wrapper = MetadataWrapper(cst.parse_module(text))
    undefined: set[str] = set()
    for scope in set(wrapper.resolve(ScopeProvider).values()):
        if scope is None:
            continue
        for access in scope.accesses:
            if not access.referents and isinstance(access.node, cst.Name):
                undefined.add(access.node.value)
    return undefined


def check_program(text: str) -> Outcome | None:
    """Check every property on `text`; None when LibCST cannot parse it (nothing to check).

    Raises `PropertyFailure` when a property does not hold."""
    try:
        diagnostics = check_text(text, RULES)
        whole = check_text(text, RULES, slicing=False)
    except (InvalidSource, cst.ParserSyntaxError):
        return None
    except Exception as error:
        raise PropertyFailure("error", f"check_text raised {error!r}") from error
    if diagnostics != whole:  # equal findings offer equal fixes (title and safety)
        raise PropertyFailure("slicing", "the sliced analysis differs from the whole-file one")
    valid = compiles(text)
    result = _fix(text, "fix_text", unsafe=True, may_refuse=not valid)
    if result is None:
        return Outcome(len(diagnostics), 0)
    if not result.fixed:
        if result.text != text:
            raise PropertyFailure("changed", "no fix was applied, yet the text changed")
        if result.diagnostics != diagnostics:
            raise PropertyFailure("recheck", "fix_text and check_text disagree on the findings")
        return Outcome(len(diagnostics), 0)
    if not diagnostics:
        raise PropertyFailure("changed", "check_text found nothing, yet fix_text fixed something")
    if valid and not compiles(result.text):
        raise PropertyFailure("compile", "the fixed text does not compile")
    again = _fix(result.text, "second fix_text", unsafe=True, may_refuse=not valid)
    if again is not None and (again.fixed or again.text != result.text):
        raise PropertyFailure("second-pass", "a second fix_text changed the fixed text")
    if again is not None and again.diagnostics != result.diagnostics:
        # A second fix_text that fixes nothing reports exactly what check_text would.
        raise PropertyFailure("recheck", "checking the fixed text differs from what was left")
    if valid and undefined_names(result.text) - undefined_names(text):
        missing = sorted(undefined_names(result.text) - undefined_names(text))
        raise PropertyFailure("undefined", f"the fix left {missing} without a binding")
    if any(d.fix_safety is FixSafety.SAFE for d in result.fixed):
        safe = _fix(text, "safe fix_text", unsafe=False, may_refuse=not valid)
        if safe is not None and valid and not compiles(safe.text):
            raise PropertyFailure("compile", "the safe-fixed text does not compile")
    return Outcome(len(diagnostics), len(result.fixed))


def _fix(text: str, what: str, *, unsafe: bool, may_refuse: bool) -> Result | None:
    try:
        return fix_text(text, RULES, unsafe_fixes=unsafe)
    except FixError as error:
        if may_refuse:
            return None  # the input did not compile: neither can any fix of it
        raise PropertyFailure("error", f"{what} raised FixError: {error}") from error
    except Exception as error:
        raise PropertyFailure("error", f"{what} raised {error!r}") from error


# ----- programs ------------------------------------------------------------------------------

JAX_PRELUDE = """\
import functools
import pickle

import jax
import jax.numpy as jnp

LOG = []


@functools.lru_cache
@jax.jit
def step(x):
    LOG.append(pickle.dumps(x))
    return x
"""


@st.composite
def spliced_programs(draw: st.DrawFn) -> str:
    """A Hypothesmith program before, after or inside the body of a JAX program's function."""
    grammar = draw(GRAMMAR_PROGRAMS)
    where = draw(st.sampled_from(["prelude", "before", "after", "inside"]))
    if where == "prelude":
        return JAX_PRELUDE + "\n" + grammar
    program = draw(jax_programs())
    if where == "before":
        return grammar + "\n" + program
    if where == "after":
        return program + "\n" + grammar
    body = indent(grammar.splitlines())
    return JAX_PRELUDE + "\n\n@jax.jit\ndef fuzzed(x, y):\n" + "\n".join(body) + "\n    return x\n"


def _assert_properties(text: str) -> Outcome:
    outcome = check_program(text)
    assume(outcome is not None)
    assert outcome is not None
    return outcome


# ----- properties ----------------------------------------------------------------------------


@fuzz_settings(20)
@given(GRAMMAR_PROGRAMS)
def test_grammar_programs(text: str) -> None:
    _assert_properties(text)


@fuzz_settings(10)
@given(spliced_programs())
# Found by a random draw: a file whose only finding has no fix came back as LibCST's code of
# it, less its blank last lines.
@example(
    "import functools\nimport jax\nimport jax.numpy as jnp\n\n\n@functools.lru_cache\n"
    "def step_0(x):\n    return x\n\n\nout_0 = jax.vmap(step_0)(jnp.ones(3))\n"
    "step_0.cache_clear()\n\n\n "
)
def test_grammar_programs_spliced_into_jax(text: str) -> None:
    _assert_properties(text)


@fuzz_settings(DEFAULT_JAX_EXAMPLES)
@given(jax_programs())
def test_jax_programs(text: str) -> None:
    assert compiles(text)  # the generator's own guarantee
    outcome = _assert_properties(text)
    assert outcome is not None


FOUND = sorted((Path(__file__).parent / "fuzz_found").glob("*.py"))


@pytest.mark.parametrize("path", FOUND, ids=[path.stem for path in FOUND])
def test_programs_fuzzing_found_keep_every_property(path: Path) -> None:
    """Programs on which a property once failed (shrinking them can take minutes)."""
    assert check_program(path.read_text(encoding="utf-8")) is not None
