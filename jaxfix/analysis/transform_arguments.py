"""What a transform's options say of the arguments of the function it wraps: which are static
(`static_argnums`, `static_argnames`), unbatched (`in_axes=None`), or Python values by their
annotations and defaults."""

from __future__ import annotations

import ast

from jaxfix.analysis.summaries import FunctionNode, defaults_of
from jaxfix.models.transforms import (
    PYTHON_TYPES,
    TransformSpec,
    Wrapped,
)


def _keyword(call: ast.Call | None, name: str | None) -> ast.expr | None:
    if call is None or name is None:
        return None
    return next((k.value for k in call.keywords if k.arg == name), None)


def _int_tuple(node: ast.expr | None) -> tuple[int, ...]:
    return (
        tuple(e.value for e in literal_elements(node) if isinstance(e.value, int)) if node else ()
    )


def _str_tuple(node: ast.expr | None) -> tuple[str, ...]:
    return (
        tuple(e.value for e in literal_elements(node) if isinstance(e.value, str)) if node else ()
    )


def _argnums(spec: TransformSpec, options: ast.Call | None) -> tuple[int, ...] | None:
    """The positions a grad-like transform traces (its `argnums`, or their default); None for
    a transform that traces every parameter."""
    if spec.argnums_keyword is None and not spec.default_argnums:
        return None
    return _int_tuple(_keyword(options, spec.argnums_keyword)) or spec.default_argnums


def wrapped_by(transform: str, spec: TransformSpec, options: ast.Call) -> Wrapped:
    """What a wrapper whose body returns `options` (`jax.vmap(fn, in_axes=(0, None))`, a call
    of `transform`) does to every function it wraps."""
    positions, names = _static_arguments(spec, options)
    argnums = _int_tuple(_keyword(options, spec.argnums_keyword)) if spec.argnums_keyword else ()
    return Wrapped(
        transform,
        (*positions, *_unbatched_positions(spec, options)),
        names,
        argnums or None,
    )


def _static_arguments(
    spec: TransformSpec, options: ast.Call | None
) -> tuple[tuple[int, ...], tuple[str, ...]]:
    """The positions and names a transform's call declares static (`static_argnums=1`), with
    those its spec holds for every function (a wrapper's)."""
    positions = [i for k in spec.static_argnums_keywords for i in _int_tuple(_keyword(options, k))]
    names = [n for k in spec.static_argnames_keywords for n in _str_tuple(_keyword(options, k))]
    return (*positions, *spec.static_positions), (*names, *spec.static_names)


def _static_params(
    spec: TransformSpec, options: ast.Call | None, positional: list[str]
) -> set[str]:
    positions, names = _static_arguments(spec, options)
    in_range = [i for i in positions if -len(positional) <= i < len(positional)]
    return {positional[i] for i in in_range} | set(names)


def _unbatched(spec: TransformSpec, options: ast.Call | None, positional: list[str]) -> set[str]:
    return {positional[i] for i in _unbatched_positions(spec, options) if i < len(positional)}


def _unbatched_positions(spec: TransformSpec, options: ast.Call | None) -> tuple[int, ...]:
    """The positions an `in_axes` literal leaves unbatched (`None`): concrete values."""
    axes = _keyword(options, spec.in_axes_keyword)
    if axes is None and spec.in_axes_keyword and options is not None and len(options.args) > 1:
        axes = options.args[1]
    if not isinstance(axes, ast.Tuple | ast.List):
        return ()
    return tuple(
        i for i, e in enumerate(axes.elts) if isinstance(e, ast.Constant) and e.value is None
    )


def python_valued_params(node: FunctionNode | ast.Module) -> set[str]:
    """Parameters that look like Python values, not arrays: annotated with a Python type
    (`n: int`, `act: Callable[...]`, `k: int | None`) or defaulting to a literal (`n=3`), what
    Equinox's filters treat as static."""
    if isinstance(node, ast.Module):
        return set()
    args = node.args
    positional = [*args.posonlyargs, *args.args]
    defaults = defaults_of(args)
    return {
        param.arg
        for param in [*positional, *args.kwonlyargs]
        if (param.annotation is not None and annotation_names(param.annotation) <= PYTHON_TYPES)
        or _literal(defaults.get(param.arg))
    }


def _literal(node: ast.expr | None) -> bool:
    """A number, string (f-strings too), `True`, `False` or `None`."""
    if isinstance(node, ast.JoinedStr):
        return True
    return isinstance(node, ast.Constant) and node.value is not Ellipsis


def annotation_names(annotation: ast.expr) -> set[str]:
    """The type names an annotation is made of (`Callable[[int], int] | None` -> Callable,
    None); an unknown shape gives a name no Python type has."""
    if isinstance(annotation, ast.Name):
        return {annotation.id}
    if isinstance(annotation, ast.Attribute):
        return {annotation.attr}
    if isinstance(annotation, ast.Constant) and annotation.value is None:
        return {"None"}
    if isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):
        return annotation_names(annotation.left) | annotation_names(annotation.right)
    if isinstance(annotation, ast.Subscript):
        return annotation_names(annotation.value)
    return {"<unknown>"}


def is_constant(node: ast.expr, value: object) -> bool:
    return isinstance(node, ast.Constant) and node.value is value


def literal_elements(node: ast.expr) -> list[ast.Constant]:
    """The literals of a literal tuple, list or set (or the one literal); `-1` included."""
    elements = node.elts if isinstance(node, ast.Tuple | ast.List | ast.Set) else [node]
    found = []
    for element in elements:
        if isinstance(element, ast.Constant):
            found.append(element)
        elif (
            isinstance(element, ast.UnaryOp)
            and isinstance(element.op, ast.USub)
            and isinstance(element.operand, ast.Constant)
            and isinstance(element.operand.value, int)
        ):
            found.append(ast.Constant(-element.operand.value))
    return found
