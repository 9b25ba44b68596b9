"""Generate `jaxfix/models/numpy_scipy.tsv`: which NumPy and SciPy functions need the data of a
traced array (a host conversion sink for JF104) and which work on a tracer.

Every public function of the modules below, and every method of a host NumPy array (as
`numpy.ndarray.<name>`: `TABLE[i]` is `TABLE.__getitem__(i)`), is called inside `jax.jit` on
tracers, with a few argument patterns (one array, an array and a scalar...). A function is

- `converts` when a pattern raised one of jax's conversion errors and none with the tracer as
  the first argument ran;
- `works` when a pattern ran (NumPy calls the array's own method, reads `.shape`...): a
  function that runs for some arguments is never reported, whatever the others do;
- `unknown` when no pattern ran or converted (it wants other arguments), or it is skipped.

Run it under the pinned jax (the test extras) after changing a pin:

    .venv/bin/python scripts/numpy_model.py           # rewrite the table
    .venv/bin/python scripts/numpy_model.py --check   # exit 1 if the table is not current
    .venv/bin/python -m jaxfix.rules.registry             # then JF104's anchors in the rule index

The static tool never imports jax: it reads the table (`jaxfix.models.numpy_scipy`).
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import importlib
import io
import os
import signal
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import FrameType, ModuleType
from typing import Any

# SciPy's array API dispatch (off by default) would hand tracers to jax: model the default.
os.environ.pop("SCIPY_ARRAY_API", None)
os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax
import jax.numpy as jnp
import numpy as np
import scipy

TABLE = Path(__file__).resolve().parent.parent / "jaxfix" / "models" / "numpy_scipy.tsv"
MODULES = (
    "numpy",
    "numpy.linalg",
    "numpy.fft",
    "numpy.random",
    "numpy.testing",
    "scipy.special",
    "scipy.linalg",
    "scipy.fft",
    "scipy.signal",
    "scipy.ndimage",
    "scipy.stats",
    "scipy.integrate",
    "scipy.interpolate",
    "scipy.spatial.distance",
    "scipy.cluster.vq",
)
# The methods of `scipy.stats` distributions that take data (`norm.pdf(x)`); jax.scipy.stats
# has the same for its distributions.
DISTRIBUTION_METHODS = ("pdf", "logpdf", "cdf", "logcdf", "sf", "logsf", "ppf", "isf")
DISCRETE_METHODS = ("pmf", "logpmf", "cdf", "logcdf", "sf", "logsf", "ppf", "isf")
# Methods of a host NumPy array given a tracer (`TABLE[i]` is `TABLE.__getitem__(i)`), beside
# its public methods; as `numpy.ndarray.<name>`.
ARRAY_DUNDERS = ("__getitem__", "__setitem__", "__contains__", "__add__", "__mul__", "__matmul__")
# Not called: the reason is the table's detail.
_FILES = "reads or writes files"
_STATE = "changes global state"
SKIPPED = {
    **dict.fromkeys(
        [
            "numpy.save",
            "numpy.savez",
            "numpy.savez_compressed",
            "numpy.savetxt",
            "numpy.load",
            "numpy.loadtxt",
            "numpy.genfromtxt",
            "numpy.fromfile",
            "numpy.fromregex",
        ],
        _FILES,
    ),
    **dict.fromkeys(
        [
            "numpy.set_printoptions",
            "numpy.seterr",
            "numpy.seterrcall",
            "numpy.setbufsize",
            "numpy.random.set_state",
            "numpy.random.seed",
            "scipy.special.seterr",
        ],
        _STATE,
    ),
    "numpy.ndarray.dump": _FILES,
    "numpy.ndarray.tofile": _FILES,
    "numpy.test": "runs NumPy's test suite",
    "numpy.info": "prints documentation",
    "numpy.show_config": "prints the build configuration",
    "numpy.show_runtime": "prints the runtime configuration",
}
# A guard only: a function that takes this long belongs in SKIPPED.
TIMEOUT_S = 10.0
CONVERSION_ERRORS = (
    jax.errors.TracerArrayConversionError,
    jax.errors.TracerIntegerConversionError,
    jax.errors.TracerBoolConversionError,
    jax.errors.ConcretizationTypeError,
)

Tracers = tuple[Any, Any, Any, Any]  # float32[3], float32[3, 3], int32[3], int32[] (a count)
Pattern = Callable[[Callable[..., Any], Tracers], Any]
VECTOR = np.linspace(0.1, 0.9, 3, dtype=np.float32)
MATRIX = np.eye(3, dtype=np.float32)
# The tracer first, every other argument concrete (and no degenerate 0: `np.diff(x, 0)` returns
# `x`): a conversion error is the tracer's. By the label the table shows for a function that runs.
FIRST: dict[str, Pattern] = {
    "(x)": lambda f, t: f(t[0]),
    "(m)": lambda f, t: f(t[1]),
    "(i)": lambda f, t: f(t[2]),
    "(n)": lambda f, t: f(t[3]),
    "(n, 0.5)": lambda f, t: f(t[3], 0.5),
    "(x, 2)": lambda f, t: f(t[0], 2),
    "(x, -1)": lambda f, t: f(t[0], -1),
    "(x, 0.5)": lambda f, t: f(t[0], 0.5),
    "(x, vector)": lambda f, t: f(t[0], VECTOR),
    "(m, -1)": lambda f, t: f(t[1], -1),
    "(m, 1, -1)": lambda f, t: f(t[1], 1, -1),
    "(m, vector)": lambda f, t: f(t[1], VECTOR),
    "(m, matrix)": lambda f, t: f(t[1], MATRIX),
    "(x, 2, 2)": lambda f, t: f(t[0], 2, 2),
    "(x, 0.5, 0.5)": lambda f, t: f(t[0], 0.5, 0.5),
}
# Tried when no FIRST pattern ran or converted: the tracer as a later argument
# (`scipy.special.jv(2, x)`, `np.apply_along_axis(f, 0, x)`).
LATER: dict[str, Pattern] = {
    "(2, x)": lambda f, t: f(2, t[0]),
    "(0.5, x)": lambda f, t: f(0.5, t[0]),
    "(vector, x)": lambda f, t: f(VECTOR, t[0]),
    "(matrix, m)": lambda f, t: f(MATRIX, t[1]),
    "(2, 0.5, x)": lambda f, t: f(2, 0.5, t[0]),
}
SPECS = (
    jax.ShapeDtypeStruct((3,), jnp.float32),
    jax.ShapeDtypeStruct((3, 3), jnp.float32),
    jax.ShapeDtypeStruct((3,), jnp.int32),
    jax.ShapeDtypeStruct((), jnp.int32),
)


@dataclass(frozen=True)
class Row:
    function: str
    behaviour: str  # converts / works / unknown
    namesake: str  # the jax function of the same name, or "-"
    detail: str  # the error raised, the pattern that ran, or why it is unknown


class _Timeout(BaseException):
    """Raised by the alarm; a BaseException so that the probed code's `except Exception` lets
    it through."""


def _on_alarm(signum: int, frame: FrameType | None) -> None:
    raise _Timeout


def public_functions(module: ModuleType) -> Iterator[tuple[str, Any]]:
    """`(name, function)` for the module's public callables (its `__all__`, or its names without
    an underscore): functions, ufuncs, NumPy's scalar types (`np.float32`) and the data methods
    of `scipy.stats` distributions. Other classes and modules are left out."""
    names = getattr(module, "__all__", None) or [n for n in dir(module) if not n.startswith("_")]
    for name in sorted(set(names)):
        obj = getattr(module, name, None)
        if obj is None or isinstance(obj, ModuleType):
            continue
        if isinstance(obj, scipy.stats.rv_continuous | scipy.stats.rv_discrete):
            methods = (
                DISCRETE_METHODS
                if isinstance(obj, scipy.stats.rv_discrete)
                else DISTRIBUTION_METHODS
            )
            for method in methods:
                yield f"{name}.{method}", getattr(obj, method)
        elif isinstance(obj, type):
            if issubclass(obj, np.generic):
                yield name, obj
        elif callable(obj):
            yield name, obj


def array_methods() -> Iterator[tuple[str, Callable[..., Any]]]:
    """`(name, function)` for the methods of a host NumPy array: the function calls the method
    of a fresh float32[3, 3] array (some change it in place) with the arguments it is given."""
    names = [n for n in dir(np.ndarray) if not n.startswith("_")] + list(ARRAY_DUNDERS)
    for name in sorted(names):
        if callable(getattr(MATRIX, name)):
            yield name, _method_of_fresh_array(name)


def _method_of_fresh_array(name: str) -> Callable[..., Any]:
    def call(*args: Any) -> Any:
        return getattr(MATRIX.copy(), name)(*args)

    return call


def probe(function: Callable[..., Any]) -> tuple[str, str]:
    """`(behaviour, detail)` of `function` called on tracers inside `jax.jit`. Of the FIRST
    patterns, any that runs makes it `works`; the LATER ones, tried only when none of those ran
    or converted, put the tracer in different places: the first that runs or converts decides
    (`np.full(2, x)` converts; `np.full(2, 0.5, x)` reads a dtype from `x.dtype` and runs)."""
    failed: set[str] = set()
    outcomes = _outcomes(function, FIRST, failed)
    ran = [label for label, conversion in outcomes if not conversion]
    if ran:
        return "works", ran[0]
    if outcomes:
        return "converts", outcomes[0][1]
    for label, conversion in _outcomes(function, LATER, failed)[:1]:
        return ("converts", conversion) if conversion else ("works", label)
    return "unknown", "no pattern ran: " + ", ".join(sorted(failed))


def _outcomes(
    function: Callable[..., Any], patterns: dict[str, Pattern], failed: set[str]
) -> list[tuple[str, str]]:
    """`(label, conversion error or "")` of the patterns that ran or converted, in order; the
    names of other errors go to `failed`."""
    outcomes: list[tuple[str, str]] = []

    def body(*tracers: Any) -> None:
        for label, call in patterns.items():
            try:
                call(function, tracers)
            except _Timeout:
                raise
            except Exception as error:  # what the function raises is the measurement
                conversion = _conversion(error)
                if conversion:
                    outcomes.append((label, conversion))
                else:
                    failed.add(type(error).__name__)
            else:
                outcomes.append((label, ""))

    jax.jit(body).trace(*SPECS)
    return outcomes


def _conversion(error: BaseException | None) -> str:
    """The jax conversion error `error` is, or was raised from ("" if none)."""
    seen: set[int] = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        if isinstance(error, CONVERSION_ERRORS):
            return type(error).__name__
        error = error.__cause__ or error.__context__
    return ""


def namesake(function: str) -> str:
    """The jax function of the same name and module (`jax.numpy.fft.fft`,
    `jax.scipy.special.expit`; SciPy's `fft` and `linalg` also through `jax.numpy`), or "-"."""
    module, _, rest = function.partition(".")
    candidates = [f"jax.{function}"] if module == "scipy" else [f"jax.numpy.{rest}"]
    if function.startswith(("scipy.fft.", "scipy.linalg.")):
        candidates.append(f"jax.numpy.{rest}")
    if function.startswith(("numpy.random.", "numpy.ndarray.")):
        candidates = []  # `jax.random` takes a key; a method is the array's: no namesake
    for candidate in candidates:
        if callable(_resolve(candidate)):
            return candidate
    return "-"


def _resolve(dotted: str) -> Any:
    parts = dotted.split(".")
    for split in range(len(parts), 0, -1):
        try:
            obj: Any = importlib.import_module(".".join(parts[:split]))
        except ImportError:
            continue
        for part in parts[split:]:
            obj = getattr(obj, part, None)
        return obj
    return None


def generate() -> tuple[list[Row], float]:
    """The table's rows, sorted, and the seconds it took."""
    start = time.monotonic()
    rows: dict[str, Row] = {}
    previous = signal.signal(signal.SIGALRM, _on_alarm)
    sink = io.StringIO()
    with (
        tempfile.TemporaryDirectory() as scratch,
        contextlib.chdir(scratch),
        contextlib.redirect_stdout(sink),
        contextlib.redirect_stderr(sink),
        warnings.catch_warnings(),
        np.errstate(all="ignore"),
    ):
        warnings.simplefilter("ignore")
        for module_name in MODULES:
            module = importlib.import_module(module_name)
            for name, function in public_functions(module):
                full = f"{module_name}.{name}"
                if full not in rows:
                    rows[full] = _row(full, function)
        for name, function in array_methods():
            rows[f"numpy.ndarray.{name}"] = _row(f"numpy.ndarray.{name}", function)
    signal.signal(signal.SIGALRM, previous)
    return sorted(rows.values(), key=lambda r: r.function), time.monotonic() - start


def _row(full: str, function: Callable[..., Any]) -> Row:
    if full in SKIPPED:
        return Row(full, "unknown", "-", f"skipped: {SKIPPED[full]}")
    signal.setitimer(signal.ITIMER_REAL, TIMEOUT_S)
    try:
        behaviour, detail = probe(function)
    except _Timeout:
        behaviour, detail = "unknown", f"timed out after {TIMEOUT_S:g} s: add it to SKIPPED"
        print(f"{full}: {detail}", file=sys.__stderr__)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    return Row(full, behaviour, namesake(full) if behaviour == "converts" else "-", detail)


def summary(rows: list[Row]) -> str:
    """`2226 converts, 69 works, 302 unknown, 2597 functions`."""
    counts = [
        f"{sum(r.behaviour == b for r in rows)} {b}" for b in ("converts", "works", "unknown")
    ]
    return ", ".join([*counts, f"{len(rows)} functions"])


def render(rows: list[Row]) -> str:
    """The table as text: a header with the versions it holds for, then one row a line."""
    header = [
        "# Generated by scripts/numpy_model.py: do not edit; run it to regenerate.",
        f"# jax {jax.__version__}, numpy {np.__version__}, scipy {scipy.__version__}",
        "# Each public function (and numpy.ndarray.* : a host array's method) called on tracers",
        "# inside jax.jit: converts (needs the data: a host conversion sink), works (ran on the",
        "# tracer for some arguments), unknown (neither, or skipped).",
        f"# {summary(rows)}",
        "function\tbehaviour\tnamesake\tdetail",
    ]
    body = [f"{r.function}\t{r.behaviour}\t{r.namesake}\t{r.detail}" for r in rows]
    return "\n".join(header + body) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare, do not write")
    parser.add_argument("--output", type=Path, default=TABLE)
    args = parser.parse_args(argv)
    rows, seconds = generate()
    text = render(rows)
    if args.check:
        current = args.output.read_text() if args.output.exists() else ""
        if current == text:
            return 0
        diff = difflib.unified_diff(
            current.splitlines(), text.splitlines(), str(args.output), "generated", lineterm=""
        )
        print("\n".join(list(diff)[:60]))
        print(
            f"{args.output} is not current: run `python scripts/numpy_model.py` (or install the"
            " pinned jax, NumPy and SciPy: `pip install -e '.[test]'`)"
        )
        return 1
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(text)
    print(f"wrote {args.output} in {seconds:.1f} s: {summary(rows)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
