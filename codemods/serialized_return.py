"""JF107 serialized-return: a traced function returns a serialization of a traced value."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import libcst as cst
from libcst.metadata import Assignment

from jaxfix.analysis.project import ChangedImport, ReturnChange
from jaxfix.fixes.call_sites import assigned, call_sites, count_returns, only_here
from jaxfix.fixes.fix import Fix, ImportNeeded, Replacement
from jaxfix.fixes.hoist import jax_module_name
from jaxfix.fixes.returns import DUMPS, Part, Returned, returned
from jaxfix.fixes.syntax import source_of
from jaxfix.fixes.tracing import TracedFunction
from jaxfix.models.diagnostic import FixSafety
from jaxfix.rules.rule import Rule, command_hooks

# `json.dumps(jax.device_get(x))` still fails (an ndarray is not JSON): no mechanical fix.
NOT_FIXABLE = frozenset({"json.dumps"})
_LITERALS = (cst.Integer, cst.Float, cst.SimpleString)


class SerializedReturn(Rule):
    """
    ## What it does
    Finds a function that jax traces and that returns a serialization of a traced value:
    `return pickle.dumps(y)`, `b = pickle.dumps(y); return b`, or a pickled value inside a
    returned tuple or dict (`return y, pickle.dumps(z)`, `return {"blob": pickle.dumps(z)}`).

    ## Why is this bad?
    Inside the trace `y` is a `Tracer` without data: pickling it raises
    `jax.errors.ConcretizationTypeError` ("The error occurred in the `__reduce__` method, which
    may indicate an attempt to serialize/pickle a traced value."). A jitted function can only
    return arrays, so the bytes cannot be made inside it at all.

    ## Example
    ```python
    @jax.jit
    def encode(x):
        y = jnp.sort(x)
        return pickle.dumps(y)


    blob = encode(x)
    ```

    ## Use instead
    ```python
    @jax.jit
    def encode(x):
        y = jnp.sort(x)
        return y


    blob = pickle.dumps(jax.device_get(encode(x)))
    ```
    The function returns the array and each call site serializes a host copy after the call;
    for a tuple (`a, b = f(x)`) or dict (`out = f(x)`) result, a statement after the call
    serializes the right part. `jax.device_get` hands the serializer NumPy arrays, so the bytes
    load without jax.

    The rewrite needs every call site: it is made when every use of the function is a call
    outside traced code that jaxfix can rewrite, and no other module can call the function:
    its name is private (`_encode`), or the module is a script (`if __name__ == "__main__":`),
    or, in a run over the whole project, every module that imports it is part of the run and
    is rewritten too (not when the name is in `__all__`). Otherwise the finding says why.

    ## Fix safety
    Unsafe. The function now returns the array instead of bytes: any caller jaxfix did not see
    would get an array. The bytes hold NumPy arrays rather than `jax.Array`s.

    ## References
    - https://docs.jax.dev/en/latest/errors.html#jax.errors.ConcretizationTypeError
    - https://docs.jax.dev/en/latest/faq.html#how-can-i-convert-a-jax-tracer-to-a-numpy-array
    """

    code = "JF107"
    name = "serialized-return"
    summary = "A traced function returns a serialization (pickle, json) of a traced value"
    message = (
        "`{call}` serializes a traced value that `{function}` returns ({reason}): return the"
        " array and serialize `jax.device_get(...)` of the result after the call"
    )
    fix_title = "Return the array and serialize its host copy at each call site"
    fix_safety = FixSafety.UNSAFE
    unfixed = (
        "`json.dumps` (a host copy is no JSON value either); a function with a call site not in"
        " view (public, listed in `__all__`, passed as a value) or whose call sites do not"
        " unpack its result into names"
    )
    anchors = frozenset(DUMPS)
    project_aware = True
    reads_users = True  # the callers in the module are rewritten too

    def visit_Call(self, node: cst.Call) -> None:
        context = self.traced.context_of(node)
        found = self._serializer(node)
        if context is None or found is None:
            return
        qualified, payload = found
        where = returned(self.traced, node)
        if where is None or not self.traced.is_traced(payload):
            return
        function = context.node
        if self.traced.owner_function(where.statement) is not function:
            return
        call = source_of(node.func)
        message = self.message.format(call=call, function=context.label, reason=context.reasons[0])
        fix_or_why = self._fix(context, node, qualified, payload, where)
        self._note(context, node, qualified, payload, where, fix_or_why)
        if isinstance(fix_or_why, str):
            self.report(node, f"{message}; not rewritten: {fix_or_why}")
        elif isinstance(function, cst.FunctionDef):  # its calls elsewhere change with it
            self.report(node, message, dataclasses.replace(fix_or_why, moves=function.name.value))
        else:
            self.report(node, message, fix_or_why)

    def _note(
        self,
        context: TracedFunction,
        serializer: cst.Call,
        qualified: str,
        payload: cst.BaseExpression,
        where: Returned,
        fix_or_why: Fix | str,
    ) -> None:
        """Tell the run that this function returns a serialization: its callers in other
        modules serialize the result instead, when every one of them can."""
        facts = self.traced.project.facts
        if facts is None or not isinstance(context.node, cst.FunctionDef):
            return
        extra = ", ".join(
            source_of(arg.with_changes(comma=cst.MaybeSentinel.DEFAULT))
            for arg in serializer.args
            if arg.value is not payload
        )
        name = context.node.name.value
        public = only_here(self.traced, context.node)
        why = "" if isinstance(fix_or_why, Fix) or fix_or_why == public else fix_or_why
        details = ("serializer", qualified), ("part", where.part), ("extra", extra)
        facts.return_changes.append(ReturnChange(name, self.code, details, why))

    def leave_Module(self, original_node: cst.Module) -> None:
        for imported in self.traced.project.changed_imports:
            if imported.returned.rule == self.code:
                self._rewrite_callers(imported)

    def _rewrite_callers(self, imported: ChangedImport) -> None:
        """The call sites of a function defined in another module of the run that JF107
        rewrites there: reported with their half of the fix when every call site of the run
        can be rewritten; what the run needs to decide is noted."""
        returns = imported.returned
        serializer, extra = returns.detail("serializer"), returns.detail("extra")
        module, _, function = serializer.rpartition(".")
        template = cst.parse_expression(f"{module}.{function}(x{', ' if extra else ''}{extra})")
        assert isinstance(template, cst.Call)
        replacements: dict[cst.CSTNode, Replacement] = {}
        imports = [ImportNeeded(module)]
        why = ""
        sites = []
        for reference in self.traced.references_to([imported.name]):
            site = self.traced.parent(reference)
            if not isinstance(site, cst.Call) or site.func is not reference:
                why = f"`{returns.function}` is used as a value in another module"
            elif self.traced.context_of(site) is not None:
                why = f"`{returns.function}` is called from traced code in another module"
            elif not _names_only_module(self, site, module):
                why = f"the name `{module.split('.')[0]}` is taken where it is called"
            else:
                rewritten = self._rewrite_site(
                    site, template, template.args[1:], returns.detail("part"), imports
                )
                if isinstance(rewritten, str):
                    why = rewritten
                elif rewritten:
                    replacements.update(rewritten)
                    sites.append(site)
        facts = self.traced.project.facts
        if facts is not None:
            facts.call_sites[imported.name] = why
        if why or not imported.allowed:
            return
        fix = self.make_fix(replacements, imports)
        fix = dataclasses.replace(fix, part_of=f"{imported.definer}:{returns.function}")
        message = (
            f"`{returns.function}` will return the array instead of `{serializer}`"
            " bytes (JF107 rewrites it where it is defined): serialize its host copy here"
        )
        for site in sites:
            self.report(site, message, fix)

    def _serializer(self, call: cst.Call) -> tuple[str, cst.BaseExpression] | None:
        for name in self.qualified_names(call.func):
            keyword = DUMPS.get(name)
            if keyword is None:
                continue
            for index, arg in enumerate(call.args):
                if arg.star:
                    return None
                if (arg.keyword is None and index == 0) or (
                    arg.keyword is not None and arg.keyword.value == keyword
                ):
                    return name, arg.value
        return None

    def _fix(
        self,
        context: TracedFunction,
        serializer: cst.Call,
        qualified: str,
        payload: cst.BaseExpression,
        where: Returned,
    ) -> Fix | str:
        """The rewrite of the function and of every call site, or why there is none."""
        if qualified in NOT_FIXABLE:
            return "the host copy of an array is not JSON either (serialize `.tolist()`)"
        others = [a for a in serializer.args if a.value is not payload]
        if not all(_is_constant(a.value) for a in others):
            return "the serializer's other arguments are computed inside the function"
        function = context.node
        if not isinstance(function, cst.FunctionDef):
            return "a lambda has no call sites to rewrite"
        if count_returns(function.body) != 1:
            return f"`{function.name.value}` returns in more than one place"
        sites = call_sites(self.traced, function)
        if isinstance(sites, str):
            return sites
        replacements: dict[cst.CSTNode, Replacement] = {serializer: payload}
        imports: list[ImportNeeded] = []
        for site in sites:
            rewritten = self._rewrite_site(site, serializer, others, where.part, imports)
            if isinstance(rewritten, str):
                return rewritten
            replacements.update(rewritten)
        why = only_here(self.traced, function)
        if why:
            return why  # last: every other reason is the run's to know
        return self.make_fix(replacements, imports, removed_nodes=[serializer.func])

    def _rewrite_site(
        self,
        site: cst.Call,
        serializer: cst.Call,
        others: Sequence[cst.Arg],
        part: Part,
        imports: list[ImportNeeded],
    ) -> dict[cst.CSTNode, Replacement] | str:
        jax_name, needed = jax_module_name(self.traced, site)
        if not jax_name:
            return "the name `jax` is taken where the function is called"
        imports.extend(n for n in needed if n not in imports)

        def serialized(value: cst.BaseExpression) -> cst.Call:
            host = cst.parse_expression(f"{jax_name}.device_get(x)").with_changes(
                args=[cst.Arg(value)]
            )
            return serializer.with_changes(args=[cst.Arg(host), *others])

        if part is None:
            wrapped = serialized(site)
            return {} if self._is_code_around(site, wrapped, levels=4) else {site: wrapped}
        line, target = assigned(self.traced, site)
        if line is None or target is None:
            return "a call site does not assign the result to names"
        item: cst.Name | cst.Subscript
        if isinstance(part, int):
            names = [e.value for e in target.elements] if isinstance(target, cst.Tuple) else []
            if not names or not all(isinstance(name, cst.Name) for name in names):
                return "a call site does not unpack the tuple into names"
            if part >= len(names) or not isinstance(chosen := names[part], cst.Name):
                return "a call site unpacks the tuple into fewer names"
            item = chosen
        elif isinstance(target, cst.Name):
            key = cst.SimpleString(f'"{part}"' if part.isidentifier() else repr(part))
            item = cst.Subscript(target, [cst.SubscriptElement(cst.Index(key))])
        else:
            return "a call site does not assign the dict to a name"
        after = cst.SimpleStatementLine([cst.Assign([cst.AssignTarget(item)], serialized(item))])
        if _code(_next_statement(self, line)) == _code(after):
            return {}  # rewritten already
        return {line: cst.FlattenSentinel([line, after])}

    def _is_code_around(self, node: cst.CSTNode, expected: cst.CSTNode, levels: int) -> bool:
        """Whether the node `levels` parents up from `node` reads as `expected`."""
        around: cst.CSTNode | None = node
        for _ in range(levels):
            around = self.traced.parent(around) if around is not None else None
        return around is not None and _code(around) == _code(expected)


def _code(node: cst.CSTNode | None) -> str | None:
    if node is None:
        return None
    if isinstance(node, cst.SimpleStatementLine):
        node = node.with_changes(leading_lines=())
    return source_of(node)


def _next_statement(rule: Rule, line: cst.SimpleStatementLine) -> cst.CSTNode | None:
    block = rule.traced.parent(line)
    body = list(block.body) if isinstance(block, cst.Module | cst.IndentedBlock) else []
    index = next((i for i, statement in enumerate(body) if statement is line), len(body))
    return body[index + 1] if index + 1 < len(body) else None


def _names_only_module(rule: Rule, at: cst.CSTNode, module: str) -> bool:
    """Whether the first name of `module` is free at `at`, or bound only by imports."""
    scope = rule.traced.scope_of(at)
    head = module.split(".")[0]
    return scope is None or all(
        isinstance(a, Assignment) and isinstance(a.node, cst.Import) for a in scope[head]
    )


def _is_constant(value: cst.BaseExpression) -> bool:
    if isinstance(value, _LITERALS):
        return True
    return isinstance(value, cst.Name) and value.value in {"True", "False", "None"}


# `SerializedReturnCommand`: this rule as a LibCST codemod (`python -m libcst.tool codemod`).
__getattr__, __dir__ = command_hooks(SerializedReturn)
