"""The one traced-value analysis, on CPython's syntax tree (no LibCST, no jax).

- `values`: the abstract value of a name or expression (static, traced, host array, unknown),
  traced *on condition* of the parameters it comes from; `names`: what a module's names denote
  through its imports;
- `flow`: one pass per function in statement order that yields its summary, run in pieces: the
  walk before interpretation (`declarations`), the interpreter of one body (`interpreter`:
  statements and narrowing, on `expressions`, on `calls`), what is kept of a module and its
  functions (`summaries`), what a transform's options say of its arguments
  (`transform_arguments`);
- `tracing`: which functions run under a transform and which of their parameters are tracers,
  a fixed point over the summaries' call edges; `keeping`, `keys`: what traced code keeps and
  hashes;
- `effects`, `waits`: what a statement moved into a host callback writes, and where host code
  must wait for it;
- `file`: one file's analysis as the engine runs it; `firstpass`, `candidates`: the statements
  the rules can depend on; `project`: what the modules of a run tell each other (`external`);
- `bridge`, `walk`, `statements`: positions shared with LibCST's tree, fast walks over CPython's.
"""
