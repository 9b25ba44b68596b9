"""Why a function runs under a trace: typed, so that rules decide on the kind and only messages
read the text."""

from __future__ import annotations

import enum
from collections.abc import Collection
from dataclasses import dataclass

from jaxfix.models.transforms import ABSTRACT_TRANSFORMS


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


# Traced through its callers (or an unknown higher-order call): what its parameters hold
# depends on what they pass.
THROUGH_CALLERS = frozenset({Via.APPLIED, Via.CALLED, Via.OTHER_MODULE})


def abstract_only(reasons: Collection[Reason]) -> bool:
    """Whether only transforms that find shapes (`jax.eval_shape`) trace a function traced for
    `reasons`: it never runs, so what it would do at run time never happens."""
    return bool(reasons) and all(reason.name in ABSTRACT_TRANSFORMS for reason in reasons)
