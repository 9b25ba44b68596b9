"""Another module's traced call into this one, in plain values: what the analysis enters a
function with, and what the run sends between modules (`jaxfix.analysis.project.Entry`). Its
own module, so that the run stack can hold one without importing the analysis."""

from __future__ import annotations

from dataclasses import dataclass

# In `External.keywords`: a traced `**kwargs`.
KEYWORDS = "**"


@dataclass(frozen=True)
class External:
    """Another module's traced code calls the module-level function `function` of this one,
    giving traced values to these parameters."""

    function: str
    positions: tuple[int, ...] = ()
    keywords: tuple[str, ...] = ()
    # A traced `*args` / `**kwargs` fills the positional parameters from here (a traced
    # `**kwargs` is `KEYWORDS` in `keywords`).
    rest_from: int | None = None
    staged: bool = False
    reason: str = ""
    static_positions: tuple[int, ...] = ()  # parameters also given Python values
    static_keywords: tuple[str, ...] = ()
    # Of the parameters `rest_from` and a traced `**kwargs` fill, only those without a default:
    # a transform applied to the function (`jax.jit(f)`) is called where this module cannot
    # see, and a call may leave the others to their (Python) defaults.
    required_only: bool = False
    # The parameters given a dict whose keys a flatten may reorder (`Facts.reordering`).
    reordering_positions: tuple[int, ...] = ()
    reordering_keywords: tuple[str, ...] = ()
    # The parameters every such call certainly gives a value that is not None (a literal, an
    # instance, a parameter declared without None: `jaxfix.analysis.reach.not_none`): they
    # decide an `if k is None:` branch of the function.
    not_none_positions: tuple[int, ...] = ()
    not_none_keywords: tuple[str, ...] = ()
