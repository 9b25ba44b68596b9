"""`print(...)` in traced code as the `jax.debug.print` that prints the same when the compiled
function runs: its format string and arguments (`print_arguments`), each value as the print
showed it (`float(x)` and `x.item()` print what `x` prints), none a Python value (which would
print differently) nor a dict whose keys a flatten sorts."""

from __future__ import annotations

import libcst as cst

from jaxfix.fixes.tracing import TracedAnalysis

# Conversions to a Python number: printed, they show what `jax.debug.print` shows of the array.
SCALARS = frozenset({"builtins.float", "builtins.int"})
# Calls that make a string: printed as they are, they cannot become `jax.debug.print` arguments.
STRING_BUILTINS = frozenset({"builtins.str", "builtins.repr", "builtins.ascii", "builtins.format"})
STRING_METHODS = frozenset({"format", "join"})
FORMAT = "format"
# Values whose printed order `jax.debug.print` does not keep: it flattens its arguments as trees,
# and a dict's keys come back sorted.
_UNORDERED = (cst.Dict, cst.DictComp)
# `jax.debug.print`'s own parameters: a `.format(ordered=...)` keyword would clash.
_DEBUG_PRINT_PARAMETERS = frozenset({"fmt", "ordered"})


def print_arguments(analysis: TracedAnalysis, call: cst.Call) -> tuple[str, list[cst.Arg]] | None:
    """The format string and arguments of the `jax.debug.print` that prints the same, when
    every value printed is traced (a static one would print differently)."""
    if any(arg.keyword is not None or arg.star for arg in call.args):
        return None
    if any(isinstance(arg.value, _UNORDERED) or analysis.reorders(arg.value) for arg in call.args):
        return None  # `jax.debug.print` flattens a dict as a tree: its keys come sorted
    if len(call.args) == 1:
        formatted = _format_call(analysis, call.args[0].value)
        if formatted is not None:
            return formatted
    pieces: list[str] = []
    args: list[cst.Arg] = []
    for arg in call.args:
        value = arg.value
        if isinstance(value, cst.SimpleString):
            text = value.evaluated_value
            if not isinstance(text, str):
                return None
            pieces.append(text.replace("{", "{{").replace("}", "}}"))
        elif isinstance(value, cst.FormattedString):
            converted = _fstring_template(value)
            if converted is None:
                return None
            pieces.append(converted[0])
            args.extend(cst.Arg(_unwrapped(analysis, e)) for e in converted[1])
        elif _unwrapped(analysis, value) is not value:
            pieces.append("{}")
            args.append(cst.Arg(_unwrapped(analysis, value)))
        elif _makes_string(analysis, value):
            return None  # `"%.3f" % x`, `str(x)`: formatted at trace time
        else:
            pieces.append("{}")
            args.append(cst.Arg(value))
    if not args or not all(analysis.is_traced(a.value) for a in args):
        return None
    return " ".join(pieces), args


def _unwrapped(analysis: TracedAnalysis, value: cst.BaseExpression) -> cst.BaseExpression:
    """`x` for `float(x)`, `int(x)` or `x.item()` of a traced `x`: the number that
    `jax.debug.print` prints as the conversion would; else `value`."""
    if not isinstance(value, cst.Call):
        return value
    func, args = value.func, value.args
    if not args and isinstance(func, cst.Attribute) and func.attr.value == "item":
        inner = func.value
    elif (
        len(args) == 1
        and args[0].keyword is None
        and not args[0].star
        and analysis.imported_names(func) & SCALARS
    ):
        inner = args[0].value
    else:
        return value
    return inner if analysis.is_traced(inner) else value


def _makes_string(analysis: TracedAnalysis, value: cst.BaseExpression) -> bool:
    if isinstance(value, cst.BinaryOperation):
        return isinstance(value.operator, cst.Modulo) and isinstance(value.left, cst.BaseString)
    if not isinstance(value, cst.Call):
        return False
    if isinstance(value.func, cst.Attribute) and value.func.attr.value in STRING_METHODS:
        return True
    return bool(analysis.imported_names(value.func) & STRING_BUILTINS)


def _format_call(
    analysis: TracedAnalysis, value: cst.BaseExpression
) -> tuple[str, list[cst.Arg]] | None:
    """`"...".format(...)` of traced values: its template and arguments as they are."""
    if not (
        isinstance(value, cst.Call)
        and isinstance(value.func, cst.Attribute)
        and value.func.attr.value == FORMAT
        and isinstance(value.func.value, cst.SimpleString)
    ):
        return None
    template = value.func.value.evaluated_value
    if not isinstance(template, str) or any(arg.star for arg in value.args):
        return None
    if any(
        arg.keyword is not None and arg.keyword.value in _DEBUG_PRINT_PARAMETERS
        for arg in value.args
    ):
        return None
    if not value.args or not all(analysis.is_traced(arg.value) for arg in value.args):
        return None
    return template, [arg.with_changes(comma=cst.MaybeSentinel.DEFAULT) for arg in value.args]


def _fstring_template(value: cst.FormattedString) -> tuple[str, list[cst.BaseExpression]] | None:
    """An f-string as a `str.format` template and the expressions it interpolates."""
    if "b" in value.prefix.lower():
        return None
    plain_prefix = value.prefix.lower().replace("f", "")
    quote = value.start[len(value.prefix) :]
    pieces: list[str] = []
    expressions: list[cst.BaseExpression] = []
    for part in value.parts:
        if isinstance(part, cst.FormattedStringText):
            # `{{` stays `{{`: a literal brace in an f-string and in a format template alike.
            try:
                text = cst.parse_expression(f"{plain_prefix}{quote}{part.value}{quote}")
            except cst.ParserSyntaxError:  # pragma: no cover - the text came from a string
                return None
            if not isinstance(text, cst.SimpleString):  # pragma: no cover
                return None
            evaluated = text.evaluated_value
            if not isinstance(evaluated, str):
                return None
            pieces.append(evaluated)
            continue
        assert isinstance(part, cst.FormattedStringExpression)
        if part.equal is not None:
            return None
        spec = ""
        for spec_part in part.format_spec or ():
            if not isinstance(spec_part, cst.FormattedStringText):
                return None  # a nested `{width}`
            spec += spec_part.value
        conversion = f"!{part.conversion}" if part.conversion else ""
        pieces.append("{" + conversion + (f":{spec}" if spec else "") + "}")
        expressions.append(part.expression)
    return "".join(pieces), expressions


def literal(text: str) -> str:
    """`text` as a string literal, in double quotes when it needs no more escapes."""
    literal = repr(text)
    if literal.startswith("'") and '"' not in text:
        literal = '"' + literal[1:-1].replace("\\'", "'") + '"'
    return literal
