"""No rewrite loses or changes an effect, on generated multi-module projects (#48).

For each project of a fixed sample (`tests.project_programs.projects`), `jaxfix apply
--unsafe-fixes` rewrites a copy; where it changed something and left no finding, the before
project run with jit disabled (its values concrete: what its author meant) and the after project
run as usual with host callbacks deferred (as on an accelerator) must print, log and leave in
their working directory the same things (`check_projects`).

The sample is deterministic and its programs run in one interpreter: Hypothesis draws the
projects once, with `derandomize=True` (its seed comes from the collecting function, so the
sample changes only when the generator or that function does) and without a database; the test
then checks them all together, rather than one jax interpreter per example. Hypothesis does not
shrink here: a failure prints its projects in full (`scripts/fuzz_effects.py` is the long run,
and groups its failures). `JAXFIX_FUZZ_EFFECTS=N` checks N projects instead.
"""

from __future__ import annotations

import hashlib
import os

import pytest

from tests.project_programs import (
    AFTER_ERROR,
    APPLY_ERROR,
    BEFORE_ERROR,
    DIFFER,
    EQUAL,
    RUNNER_ERROR,
    UNFIXED,
    Checked,
    Project,
    check_projects,
    drawn,
)

pytestmark = pytest.mark.jax

DEFAULT_EXAMPLES = 60
EXAMPLES = int(os.environ.get("JAXFIX_FUZZ_EFFECTS") or DEFAULT_EXAMPLES)
# What fails the test: a fixed project that does not do what its concrete run does, or an
# apply or a runner that breaks.
FAILING = (DIFFER, AFTER_ERROR, UNFIXED, APPLY_ERROR, RUNNER_ERROR)


def digest(project: Project) -> str:
    return hashlib.sha256(project.show().encode()).hexdigest()[:12]


def test_fixed_projects_keep_the_effects_of_their_concrete_run() -> None:
    checked = check_projects(drawn(EXAMPLES))
    failing = {digest(c.project): c for c in checked if c.status in FAILING}
    compared = [c for c in checked if c.status in (EQUAL, *FAILING, BEFORE_ERROR)]
    # The sample exercises the property: most of its projects are fixed and run.
    assert len(compared) >= EXAMPLES // 2, [c.status for c in checked]
    assert failing == {}, _report(list(failing.values()))


def _report(failures: list[Checked]) -> str:
    return f"{len(failures)} fixed projects lose or change an effect:\n\n" + "\n\n".join(
        f"[{digest(c.project)}] {c.show()}" for c in failures
    )
