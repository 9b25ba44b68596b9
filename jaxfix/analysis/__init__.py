"""The one traced-value analysis, on CPython's syntax tree (issue "One analysis").

- `values`: the abstract value of a name or expression (static, traced, host array, unknown),
  traced *on condition* of the parameters it comes from;
- `names`: what the names of a module denote through its imports;
- `flow`: one pass per function in statement order (rebinding, branch joins, loops to a fixed
  point, tracer guards, early exits) that yields the function's summary: the values of its
  calls, stores and returns in terms of its parameters;
- `tracing`: which functions run under a transform and which of their parameters are tracers,
  a fixed point over the summaries' call edges; and the facts rules read;
- `file`: one file's analysis as the engine runs it, before LibCST: which calls, stores and
  keys get tracers, and the calls into other modules;
- `bridge`, `walk`: positions shared with LibCST's tree, and a fast walk over CPython's.

Nothing here imports LibCST or jax.
"""
