"""Every fixture case is a proof (see STYLE.md): the exact rewrite, convergence, and under real
jax, `before.py` fails with the documented error while `after.py` runs and prints the result.
A project case (folders `before/` and `after/`, entry `main.py`) is rewritten as one run of
`jaxfix apply` over its folder, every file compared.

Every case runs with host callbacks deferred to the next `jax.effects_barrier()` (as on an
accelerator), and the cases whose programs call back to the host run again with callbacks run at
once (as on a CPU). A fixed case's before program runs again under `jax.disable_jit()`, where
its values are concrete: what it then prints, logs and writes is what its author meant, and the
fixed program must do the same (`test_runs_under_jax_with_the_effects_of_its_concrete_run`).
The programs of one rule's selected cases, in every mode, run in one interpreter, as `jaxfix
verify` runs them (starting one that imports jax costs seconds; 140 of them were most of the
suite's time). Under xdist one worker runs a rule's cases (`pytest_xdist_make_scheduler` in
conftest.py).
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from jaxfix.proofs.cases import (
    ENTRY,
    Callbacks,
    Case,
    Proving,
    Run,
    effect_differences,
    load_cases,
    problems,
    programs_for,
    run_cases,
    run_programs,
    same_output,
    sources,
)
from jaxfix.proofs.verify import check_project, fix_project
from jaxfix.rules.registry import all_rules
from jaxfix.run.engine import fix_text
from tests.memo import checked

CASES = load_cases(projects=True)
FILES = [case for case in CASES if not case.project]
PROJECTS = [case for case in CASES if case.project]
RULES = all_rules()
# What a program calls back to the host with: only there do the two modes differ.
CALLBACKS = ("jax.debug.", "io_callback", "debug.callback", "debug.print")
CALLING_BACK = [
    case
    for case in CASES
    if any(
        word in text
        for side in (case.before, case.after)
        if side.exists()
        for text in sources(side).values()
        for word in CALLBACKS
    )
]
FIXED = [case for case in CASES if case.fixed]
# Fixed cases whose fixed program does not do what the before program does with jit disabled
# (a jaxfix bug each, to fix in jaxfix, not in the case): the test asserts that they still
# differ, so that one that is fixed leaves the list.
KNOWN_EFFECT_LOSSES = {
    "cache_on_traced/diskcache_memoize": (
        "the fix drops @cache.memoize() from features(), which jit traces: the concrete run"
        " stores its result in the diskcache (dc/cache.db), the fixed program stores nothing"
    ),
    "cache_on_traced/joblib_memory_cache": (
        "the fix drops @memory.cache from smooth(), which jit traces: the concrete run writes"
        " its cache entry (cachedir/joblib/.../smooth/), the fixed program does not"
    ),
}


def codes(text: str) -> list[str]:
    return [d.code for d in checked(text, RULES)]


@pytest.mark.parametrize("case", FILES, ids=lambda c: c.id)
def test_rewrite(case: Case, request: pytest.FixtureRequest) -> None:
    before = case.before.read_text()
    assert codes(before) == case.codes
    fixed = fix_text(before, RULES, unsafe_fixes=True).text
    if request.config.getoption("--regen-fixtures") and case.fixed:
        case.after.write_text(fixed)
    if not case.fixed:
        assert fixed == before, "a case with fixed = false must be left unchanged"
        assert not case.after.exists()
        return
    after = case.after.read_text()
    assert fixed == after
    assert codes(after) == case.remaining
    assert fix_text(after, RULES, unsafe_fixes=True).text == after, "a second pass changed it"


@pytest.mark.parametrize("case", PROJECTS, ids=lambda c: c.id)
def test_rewrite_of_a_project(case: Case, request: pytest.FixtureRequest) -> None:
    """`codes` lists the findings in path order, each file's in line order; `apply` over the
    copied `before/` gives `after/` file for file."""
    before = sources(case.before)
    assert check_project(case.before, RULES) == case.codes
    fixed = fix_project(case.before, RULES)
    if request.config.getoption("--regen-fixtures") and case.fixed:
        for name, text in fixed.items():
            (case.after / name).parent.mkdir(parents=True, exist_ok=True)
            (case.after / name).write_text(text)
    if not case.fixed:
        assert fixed == before, "a case with fixed = false must be left unchanged"
        assert not case.after.exists()
        return
    assert ENTRY in before, f"a project case runs {ENTRY}"
    after = sources(case.after)
    assert fixed == after
    assert check_project(case.after, RULES) == case.remaining
    assert fix_project(case.after, RULES) == after, "a second pass changed it"


class ProofBatches:
    """The runs of the selected cases' programs, one interpreter per rule, run on first use."""

    def __init__(self, selected: list[Proving]) -> None:
        self.selected = selected
        self.runs: dict[tuple[str, Callbacks], list[Run]] = {}
        self.broken: set[str] = set()  # rules whose shared interpreter died

    def of(self, case: Case, mode: Callbacks) -> list[Run]:
        if (case.id, mode) in self.runs:
            return self.runs[case.id, mode]
        if case.rule not in self.broken:
            batch = list(
                {
                    (c.id, m): (c, m)
                    for c, m in self.selected
                    if c.rule == case.rule and (c.id, m) not in self.runs
                }.values()
            )
            try:
                self.runs.update(
                    run_cases(batch if (case, mode) in batch else [(case, mode), *batch])
                )
                return self.runs[case.id, mode]
            except RuntimeError:  # every case of the rule then runs alone: the culprit fails
                self.broken.add(case.rule)
        return run_programs(programs_for(case, mode), callbacks=mode)


# The runs each test asks of its case.
_MODES = {
    "test_runs_under_jax": (Callbacks.DEFERRED,),
    "test_runs_under_jax_with_synchronous_callbacks": (Callbacks.SYNCHRONOUS,),
    "test_runs_under_jax_with_the_effects_of_its_concrete_run": (
        Callbacks.CONCRETE,
        Callbacks.DEFERRED,
    ),
}


@pytest.fixture(scope="session")
def proof_batches(request: pytest.FixtureRequest) -> ProofBatches:
    selected = [
        (item.callspec.params["case"], mode)
        for item in request.session.items
        if isinstance(item, pytest.Function) and item.originalname in _MODES
        for mode in _MODES[item.originalname]
    ]
    return ProofBatches(selected)


@pytest.mark.jax
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_runs_under_jax(case: Case, proof_batches: ProofBatches) -> None:
    assert problems(case, proof_batches.of(case, Callbacks.DEFERRED)) == []


@pytest.mark.jax
@pytest.mark.parametrize("case", CALLING_BACK, ids=lambda c: c.id)
def test_runs_under_jax_with_synchronous_callbacks(case: Case, proof_batches: ProofBatches) -> None:
    assert problems(case, proof_batches.of(case, Callbacks.SYNCHRONOUS)) == []


@pytest.mark.jax
@pytest.mark.parametrize("case", FIXED, ids=lambda c: c.id)
def test_runs_under_jax_with_the_effects_of_its_concrete_run(
    case: Case, proof_batches: ProofBatches
) -> None:
    """Run under `jax.disable_jit()` (callbacks at once), the before program's values are
    concrete: what it prints, logs and leaves in its working directory is what its author
    meant. The fixed program, run as usual with callbacks deferred, must do the same. A before
    program that fails even so (under `grad` or `vmap` its values are still tracers) is
    skipped: "not concrete-runnable"."""
    (before,) = proof_batches.of(case, Callbacks.CONCRETE)
    after = proof_batches.of(case, Callbacks.DEFERRED)[1]
    if before.error is not None:
        pytest.skip(f"not concrete-runnable: {before.error[0]} under jax.disable_jit()")
    if after.error is not None:
        pytest.fail(f"{case.id}: the fixed program raised {after.error[0]}")
    differences = effect_differences(before, after)
    if case.id in KNOWN_EFFECT_LOSSES:
        assert differences, f"{case.id} now keeps its effects: remove it from KNOWN_EFFECT_LOSSES"
        pytest.xfail(f"{KNOWN_EFFECT_LOSSES[case.id]}: {'; '.join(differences)}")
    assert differences == [], f"{case.id}: the fixed program " + "; ".join(differences)


WAITING = [case for case in FILES if case.fixed and "effects_barrier()" in case.after.read_text()]


@pytest.mark.jax
def test_without_its_barriers_a_fixed_program_races_when_callbacks_are_deferred(
    tmp_path: Path,
) -> None:
    """The cases whose fix waits for its callback prove that it must: their after.py less the
    `jax.effects_barrier()` lines fails with deferred callbacks, and passes when they run at
    once (as on a CPU, where the race was hidden)."""
    stripped = []
    for case in WAITING:
        lines = case.after.read_text().splitlines(keepends=True)
        program = tmp_path / f"{case.rule}-{case.name}.py"
        program.write_text("".join(line for line in lines if "effects_barrier()" not in line))
        stripped.append(program)
    modes = [Callbacks.DEFERRED] * len(stripped) + [Callbacks.SYNCHRONOUS] * len(stripped)
    runs = run_programs(stripped + stripped, callbacks=modes)
    deferred, at_once = runs[: len(stripped)], runs[len(stripped) :]
    passed = [
        case.id
        for case, run in zip(WAITING, deferred, strict=True)
        if run.error is None and case.stdout is not None and same_output(run.stdout, case.stdout)
    ]
    assert len(WAITING) >= 30 and passed == []
    assert [case.id for case, run in zip(WAITING, at_once, strict=True) if run.error] == []


@pytest.mark.jax
def test_a_program_does_not_change_the_next_ones_logging_or_folder(tmp_path: Path) -> None:
    """Programs share the interpreter: a `basicConfig(force=True)` to the captured stdout must
    not keep the next program's `basicConfig` from taking effect."""
    first, second = tmp_path / "first.py", tmp_path / "second.py"
    first.write_text(
        textwrap.dedent("""\
            import logging, os, sys
            logging.basicConfig(stream=sys.stdout, level=logging.INFO, force=True)
            logging.info("first")
            os.chdir("/")
            """)
    )
    second.write_text(
        textwrap.dedent("""\
            import logging, os, sys
            logging.basicConfig(stream=sys.stdout, level=logging.INFO, format="%(message)s")
            logging.info("second")
            print(os.listdir("."))
            """)
    )
    runs = run_programs([first, second])
    assert [run.error for run in runs] == [None, None]
    assert runs[0].stdout == "INFO:root:first\n"
    assert runs[1].stdout == "second\n[]\n"
