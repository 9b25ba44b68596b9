"""SciPy's optimizers and root finders: host functions that take a Python function and arrays,
turn the arrays into NumPy arrays (a tracer raises `TracerArrayConversionError` there) and call
the function on the host with NumPy values. In traced code jax has no namesake for most of
them, so the fix runs the whole solve in `jax.pure_callback`, which needs the shape and dtype
of what it returns: each row says where that comes from.

A function handed to a solver is not run on traced values: the solver fails on its own
arguments first, and once it runs on the host it gives the function NumPy arrays.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum


class Like(Enum):
    """What a result (or a field of it) looks like."""

    START = "start"  # the starting point's shape and dtype (`x0`)
    FLOAT = "float"  # a float scalar of jax's default float dtype
    INT = "int"
    BOOL = "bool"


@dataclass(frozen=True)
class Solver:
    """`start`: the parameter that gives the starting point, with its position (None: the
    solver has none); `returns`: what the call returns when it is no `OptimizeResult`;
    `fields`: an `OptimizeResult`'s fields that jaxfix can give back, and what each is like."""

    function: str
    start: tuple[str, int] | None = None
    returns: Like | None = None
    fields: dict[str, Like] = field(default_factory=dict)


_MINIMIZER = {"x": Like.START, "fun": Like.FLOAT, "nit": Like.INT, "success": Like.BOOL}
_SCALAR_MINIMIZER = {"x": Like.FLOAT, "fun": Like.FLOAT, "nit": Like.INT, "success": Like.BOOL}
# A global minimizer's `x` has the shape of its bounds, which the code may not show.
_GLOBAL_MINIMIZER = {"fun": Like.FLOAT, "nit": Like.INT, "success": Like.BOOL}
_LEAST_SQUARES = {"x": Like.START, "cost": Like.FLOAT, "nfev": Like.INT, "success": Like.BOOL}
_ROOT = {"x": Like.START, "success": Like.BOOL, "nfev": Like.INT}

SOLVERS = {
    solver.function: solver
    for solver in (
        Solver("scipy.optimize.minimize", start=("x0", 1), fields=_MINIMIZER),
        Solver("scipy.optimize.minimize_scalar", fields=_SCALAR_MINIMIZER),
        Solver("scipy.optimize.least_squares", start=("x0", 1), fields=_LEAST_SQUARES),
        Solver("scipy.optimize.root", start=("x0", 1), fields=_ROOT),
        Solver(
            "scipy.optimize.root_scalar",
            fields={"root": Like.FLOAT, "converged": Like.BOOL, "iterations": Like.INT},
        ),
        Solver("scipy.optimize.fsolve", start=("x0", 1), returns=Like.START),
        Solver("scipy.optimize.newton", start=("x0", 1), returns=Like.START),
        Solver("scipy.optimize.fixed_point", start=("x0", 1), returns=Like.START),
        Solver("scipy.optimize.brentq", returns=Like.FLOAT),
        Solver("scipy.optimize.brenth", returns=Like.FLOAT),
        Solver("scipy.optimize.bisect", returns=Like.FLOAT),
        Solver("scipy.optimize.ridder", returns=Like.FLOAT),
        Solver("scipy.optimize.toms748", returns=Like.FLOAT),
        Solver("scipy.optimize.differential_evolution", fields=_GLOBAL_MINIMIZER),
        Solver("scipy.optimize.dual_annealing", fields=_GLOBAL_MINIMIZER),
        Solver("scipy.optimize.basinhopping", start=("x0", 1), fields=_MINIMIZER),
        Solver("scipy.optimize.curve_fit"),
    )
}
