"""LibCST edit building: the hoists into host callbacks, the after-call moves, the
imports and call sites a fix rewrites, and the bridge from the analysis to LibCST's tree."""
