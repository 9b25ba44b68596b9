"""Where host code sends values to be logged, by method name and module: the sinks JF103
(`leak-in-traced`) reports a traced value passed to, and whose arguments JF104
(`host-conversion-in-traced`) leaves to it. The logging functions and logger makers, by full
name, are JF103's rows of the sink model (`LeakInTraced.sinks`)."""

from __future__ import annotations

LEVELS = ("debug", "info", "warning", "warn", "error", "critical", "exception", "fatal", "log")
LOGGING_MODULES = ("logging.", "absl.logging.", "wandb.", "mlflow.log_")
# Methods of a logger (`logging.getLogger(...)`, `wandb.init()`).
LOGGER_METHODS = frozenset(LEVELS)
# Metrics writers' methods (`tensorboardX`, `torch.utils.tensorboard`, `clu`), on any receiver.
METRICS_METHODS = frozenset({"add_scalar", "add_scalars", "add_histogram", "log_metrics"})
