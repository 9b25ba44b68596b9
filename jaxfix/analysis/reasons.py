"""Why a function runs under a trace: typed, so that rules decide on the kind and only messages
read the text."""

from __future__ import annotations

import enum
from dataclasses import dataclass


class Via(enum.Enum):
    DECORATED = "decorated with `{}`"
    PASSED = "passed to `{}`"
    CALLED = "called from traced `{}`"
    MODULE_METHOD = "a method of a `{}`"
    CUSTOM_RULE = "a custom derivative rule"
    APPLIED = "applied to traced values"  # by an unknown higher-order call in traced code
    OTHER_MODULE = "{}"  # another module's reason, as that module's message gives it


@dataclass(frozen=True)
class Reason:
    via: Via
    name: str = ""  # the transform, the traced caller or the module base

    def __str__(self) -> str:
        return self.via.value.format(self.name)
