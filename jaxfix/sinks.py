"""Where host code sends values to be logged: the sinks JF103 (`leak-in-traced`) reports a
traced value passed to, and whose arguments JF104 (`host-conversion-in-traced`) leaves to it."""

from __future__ import annotations

LEVELS = ("debug", "info", "warning", "warn", "error", "critical", "exception", "fatal", "log")
# Module-level logging functions, by full name.
LOGGING_FUNCTIONS = frozenset(
    {f"logging.{level}" for level in LEVELS}
    | {f"absl.logging.{level}" for level in LEVELS}
    | {"wandb.log", "wandb.run.log"}
)
LOGGING_MODULES = ("logging.", "absl.logging.", "wandb.")
# Methods of a logger (`logging.getLogger(...)`, `wandb.init()`).
LOGGER_METHODS = frozenset(LEVELS)
LOGGER_MAKERS = frozenset({"logging.getLogger", "wandb.init"})
# Metrics writers' methods (`tensorboardX`, `torch.utils.tensorboard`, `clu`), on any receiver.
METRICS_METHODS = frozenset({"add_scalar", "add_scalars", "add_histogram", "log_metrics"})
