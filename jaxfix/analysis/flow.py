"""One pass over each function in statement order: its summary.

The body is interpreted abstractly (see `values`): a rebinding changes a name's value from that
statement on, `if`/`try` branches join, a branch that returns or raises does not reach the join,
loops run to a fixed point. Parameters are symbolic (`Param`), so the summary holds for every
caller: what each call, store and subscript receives, and what the function returns, as
conditions on its parameters. `jaxfix.analysis.tracing` later decides which conditions hold.

The pieces, each a module of its own: the walk before anything is interpreted
(`declarations`: scopes, bindings, classes, the transforms applied), the interpreter of one body
(`interpreter`: statements, bindings and narrowing; on `expressions`, on `calls`), what the
analysis keeps of a module and its functions (`summaries`), and what a transform's options say
of the arguments (`transform_arguments`). This module runs them in that order.

What is static whatever the parameters are: literals, `x.shape` / `dtype` / `ndim` / `size`,
`len()`, `jnp.result_type` / `finfo` / `iinfo`, NumPy computed from static values, attributes a
pytree class declares as metadata; inside `with jax.ensure_compile_time_eval():` nothing is
staged; after a tracer guard (`if isinstance(x, jax.core.Tracer): return ...`) `x` is concrete,
and code inside the guard or in a `try:` that catches the concretization errors is *guarded*:
rules leave it alone. Code that runs only when some facts of the calling context do not hold
(after a raise on a tracer, in an `if k is None:` branch) is noted with them
(`jaxfix.analysis.reach`), and resolved against each calling context.
"""

from __future__ import annotations

import ast
import threading
import weakref
from collections.abc import Mapping
from typing import cast

from jaxfix.analysis.declarations import declared, transform_items
from jaxfix.analysis.interpreter import Interpreter
from jaxfix.analysis.summaries import Module, StaticClasses
from jaxfix.models.parts import WholeModule
from jaxfix.models.transforms import TRANSFORMS, TransformSpec


def analyse(
    tree: ast.Module,
    module: str = "",
    *,
    is_package: bool = False,
    transforms: Mapping[str, TransformSpec] = TRANSFORMS,
    reuse: bool = True,
    traced_only: bool = False,
    whole: WholeModule | None = None,
    static_classes: StaticClasses = (),
) -> Module:
    """The module's analysis: the summaries of the module body (as `<module>`) and of the
    functions that may apply a transform; the others' on demand (`Module.summary_of`).
    `whole`: `tree` is a part of the module (`jaxfix.models.parts`), and this is what the whole
    module tells its analysis.
    With `traced_only` (only the module's own traced code will be asked about), a module
    that reads no name an import binds to a transform or to what holds one (`jax`, `lax`,
    `nn` for `nn.Module`) has no traced code, and nothing of it is interpreted.

    The last analysis of a tree (on this thread) is reused, with the summaries interpreted
    since, while it is `reusable`: a file that other modules trace is analysed again in each
    round of tracing across modules (`jaxfix.run.batch`), on the same tree (`jaxfix.run.engine`
    keeps the last one parsed), with other modules' calls into it (`reuse=False`: analyse
    afresh)."""
    key = (module, is_package, transform_items(transforms), traced_only, whole, static_classes)
    last: tuple[ast.Module, tuple[object, ...], Module] | None = getattr(_last, "analysed", None)
    if reuse and last is not None and last[0] is tree and last[1] == key and last[2].reusable():
        last[2].reused = True
        return last[2]
    result, transforming = declared(tree, module, is_package, transforms, traced_only, whole)
    result.static_classes = {name: frozenset(fields) for name, fields in static_classes}
    if traced_only and not transforming:
        _last.analysed = (tree, key, result)
        return result
    # The interpreters hold the module weakly: it holds the pending ones (`Module.pending`),
    # and a reference cycle would leave the whole syntax tree to the cycle collector.
    held = cast(Module, weakref.proxy(result))
    top = Interpreter(held, transforms, "<module>", tree, None, None, {})
    result.final_env = top.run()
    # The others are interpreted when the tracing finds them traced, or a caller needs them.
    for fid in [fid for fid in result.pending if fid in result.applying]:
        result.summary_of(fid)
    result.entries_found = len(result.entries)
    _last.analysed = (tree, key, result)
    return result


# The last analysis, per thread (the language server analyses documents on several).
_last = threading.local()
