"""JF001 unused-suppression: a `# jaxfix: ignore[...]` comment that silences nothing."""

from __future__ import annotations

from jaxfix.rules import suppression
from jaxfix.rules.rule import Rule, command_hooks


class UnusedSuppression(Rule):
    """
    ## What it does
    Finds `# jaxfix: ignore[CODE]` comments that silence no finding: the rule they name found
    nothing on their line (or, for a comment alone on its line, on the next one), they name no
    jaxfix rule, or they name no rule at all: a bare `# jaxfix: ignore` (or `ignore[]`) is not a
    blanket suppression, as a bare `# noqa` is in Ruff, and silences nothing; the message names
    the codes found on its line.

    ## Why is this bad?
    A stale suppression hides the next real problem on that line, and a misspelt one silences
    nothing while looking as if it did. Suppressions should only sit where they are needed.

    ## Example
    ```python
    @jax.jit
    def step(x):
        y = x * 2  # jaxfix: ignore[JF101]
        return y
    ```

    ## Use instead
    ```python
    @jax.jit
    def step(x):
        y = x * 2
        return y
    ```
    A suppression names rules by code or name, several at once, with an optional reason:
    `# jaxfix: ignore[JF101, cache-on-traced] -- checked by hand`. `# noqa: JF101` works too;
    since other linters read `noqa` comments, those are never reported as unused.

    ## Fix safety
    None: remove the comment by hand (it may hold other tools' directives).

    ## References
    - https://docs.astral.sh/ruff/rules/unused-noqa/
    """

    code = suppression.UNUSED_CODE
    name = suppression.UNUSED_NAME
    summary = "A `# jaxfix: ignore[...]` comment that silences no finding"
    message = "unused suppression"
    fix_title = "Remove the suppression comment"
    fix_safety = None
    unfixed = "all: remove the comment by hand, it may hold other tools' directives"
    anchors = frozenset()
    traced_only = False
    engine_implemented = True


# `UnusedSuppressionCommand`: this rule as a LibCST codemod (`python -m libcst.tool codemod`).
__getattr__, __dir__ = command_hooks(UnusedSuppression)
