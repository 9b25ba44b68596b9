"""The editor's settings for the server: `{"jaxfix": {"severity": "warning"}}`, sent as
`initializationOptions` or in `workspace/didChangeConfiguration`. What the project decides
(rules, fixes) stays in its `pyproject.toml`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

from lsprotocol import types

SECTION = "jaxfix"
SEVERITIES: Mapping[str, types.DiagnosticSeverity] = {
    "error": types.DiagnosticSeverity.Error,
    "warning": types.DiagnosticSeverity.Warning,
    "information": types.DiagnosticSeverity.Information,
    "hint": types.DiagnosticSeverity.Hint,
}


@dataclass(frozen=True)
class Settings:
    severity: types.DiagnosticSeverity = types.DiagnosticSeverity.Warning


def read_settings(raw: object, current: Settings) -> tuple[Settings, list[str]]:
    """`current` with what the `jaxfix` section of `raw` sets (other sections are other
    tools'), and a problem for each key or value it cannot use (which is left as it was)."""
    if not isinstance(raw, Mapping) or SECTION not in raw:
        return current, []
    section = raw[SECTION]
    if not isinstance(section, Mapping):
        return current, [f"`{SECTION}` settings must be an object, got {section!r}"]
    problems = [f"unknown setting `{SECTION}.{key}`" for key in section if key != "severity"]
    severity = section.get("severity")
    if severity is None:
        return current, problems
    if not isinstance(severity, str) or severity not in SEVERITIES:
        known = ", ".join(SEVERITIES)
        return current, [*problems, f"`{SECTION}.severity` must be one of {known}: {severity!r}"]
    return replace(current, severity=SEVERITIES[severity]), problems
