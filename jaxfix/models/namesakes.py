"""The NumPy and SciPy functions whose `jax.numpy` / `jax.scipy` namesake means the same, and
how each may be called for it to: what JF104's automatic rewrite of a NumPy call on a tracer
may put in its place (which calls are reported is the model table's, `numpy_scipy`)."""

from __future__ import annotations

from dataclasses import dataclass


def _names(text: str) -> list[str]:
    return text.split()


# NumPy functions whose `jax.numpy` namesake means the same (`JNP_EQUIVALENTS`): the automatic
# rewrite's. Which functions are reported is the model table's (`jaxfix.models.numpy_scipy`).
_UNARY = _names(
    "sin cos tan arcsin arccos arctan sinh cosh tanh arcsinh arctanh exp exp2 expm1 log log2"
    " log10 log1p sqrt cbrt square abs absolute fabs sign floor ceil trunc rint negative"
    " reciprocal isnan isinf isfinite sinc deg2rad rad2deg logical_not conj angle"
)
_BINARY = _names(
    "add subtract multiply divide true_divide power maximum minimum fmax fmin mod remainder"
    " floor_divide arctan2 hypot logaddexp equal not_equal greater less greater_equal"
    " less_equal logical_and logical_or logical_xor"
)


@dataclass(frozen=True)
class JnpEquivalent:
    """How a NumPy call is written for its `jax.numpy` namesake to mean the same: at most
    `positional` positional arguments (NumPy's next one is often `out`; None: any number) and
    only these keywords (no `out=`, `where=`, `copy=`...)."""

    positional: int | None
    keywords: frozenset[str] = frozenset()


def _takes(positional: int | None, *keywords: str) -> JnpEquivalent:
    return JnpEquivalent(positional, frozenset(keywords))


JNP_EQUIVALENTS: dict[str, JnpEquivalent] = {
    **dict.fromkeys(_UNARY, _takes(1)),
    **dict.fromkeys(_BINARY, _takes(2)),
    "asarray": _takes(2, "dtype"),
    "array": _takes(2, "dtype"),
    **dict.fromkeys(["dot", "matmul", "vdot", "inner", "outer", "kron"], _takes(2)),
    "tensordot": _takes(3, "axes"),
    "einsum": _takes(None),
    "concatenate": _takes(2, "axis"),
    "stack": _takes(2, "axis"),
    "vstack": _takes(1),
    "hstack": _takes(1),
    "where": _takes(3),  # with three arguments only: `np.where(c)` is `nonzero`
    "clip": _takes(3),
    "expand_dims": _takes(2, "axis"),
    "broadcast_to": _takes(2, "shape"),
    "tile": _takes(2),
    "roll": _takes(3, "shift", "axis"),
    "tril": _takes(2, "k"),
    "triu": _takes(2, "k"),
    "zeros_like": _takes(2, "dtype"),
    "ones_like": _takes(2, "dtype"),
    "full_like": _takes(3, "fill_value", "dtype"),
    "nan_to_num": _takes(1, "nan", "posinf", "neginf"),
    "float32": _takes(1),
    "int32": _takes(1),
    "linalg.norm": _takes(4, "ord", "axis", "keepdims"),
    "linalg.inv": _takes(1),
    "linalg.det": _takes(1),
    "linalg.solve": _takes(2),
    # NumPy's and `jax.numpy`'s default `method="linear"` interpolate alike.
    **dict.fromkeys(["percentile", "quantile"], _takes(2, "axis", "keepdims")),
    "median": _takes(2, "axis", "keepdims"),
}
# SciPy functions whose `jax.scipy` namesake means the same, and how they may be called.
SCIPY_EQUIVALENTS: dict[str, JnpEquivalent] = {
    **dict.fromkeys(
        [f"scipy.special.{f}" for f in ("expit", "logit", "erf", "erfc", "gammaln")], _takes(1)
    ),
    **dict.fromkeys(["scipy.special.xlogy", "scipy.special.xlog1py"], _takes(2)),
    **dict.fromkeys(["scipy.special.softmax", "scipy.special.log_softmax"], _takes(2, "axis")),
    "scipy.special.logsumexp": _takes(2, "axis", "b", "keepdims"),
}
