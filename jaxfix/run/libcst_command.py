"""Every jaxfix rule as a LibCST codemod command, for `python -m libcst.tool codemod`.

A rule module ends with `__getattr__, __dir__ = command_hooks(TheRule)` (`jaxfix.rules.rule`): its
attribute `TheRuleCommand` is then a `CodemodCommand` built here on first access (PEP 562),
because `libcst.codemod` takes about 0.4 s to import and every jaxfix run imports the rules.
"""

from __future__ import annotations

import argparse
import functools
from pathlib import Path
from typing import TYPE_CHECKING

import libcst as cst

from jaxfix.rules.rule import Rule, command_name
from jaxfix.run import engine
from jaxfix.run.config import ConfigFinder, Overrides, job_for
from jaxfix.run.job import Job

if TYPE_CHECKING:
    from libcst.codemod import CodemodCommand, CodemodContext


def description(rule: type[Rule]) -> str:
    """One line for `libcst.tool list` and `--help`: the rule, what it finds, what it fixes."""
    if rule.fix_safety is None:
        fix = "No fix: it only warns"
    else:
        fix = f"{rule.fix_safety.value.capitalize()} fix: {rule.fix_title}"
    return f"{rule.code} {rule.name}: {rule.summary}. {fix}"


def project_job(filename: str) -> Job:
    """The job the file's `[tool.jaxfix]` gives it (transforms, rule options, fixability);
    a bad configuration file raises, so libcst.tool reports the file as failed."""
    path = Path(filename)
    return job_for(ConfigFinder(Overrides()).for_path(path), path, fix=True)


@functools.cache
def command_for(rule: type[Rule]) -> type[CodemodCommand]:
    """`rule` as a codemod command (one class per rule, so that pickling it by name works)."""
    from libcst.codemod import CodemodCommand, SkipFile

    class Command(CodemodCommand):
        """Applies the rule's allowed fixes with jaxfix's engine, which honours suppression
        comments and the file's `[tool.jaxfix]`, and warns about the findings left. An
        unchanged file is skipped; a `FixError` propagates, so libcst.tool reports the file as
        failed and leaves it alone."""

        DESCRIPTION = description(rule)

        def __init__(self, context: CodemodContext, unsafe_fixes: bool = False) -> None:
            super().__init__(context)
            self.unsafe_fixes = unsafe_fixes

        @staticmethod
        def add_args(arg_parser: argparse.ArgumentParser) -> None:
            arg_parser.add_argument(
                "--unsafe-fixes",
                action="store_true",
                help="Also apply unsafe fixes, which change behaviour: review them",
            )

        def transform_module_impl(self, tree: cst.Module) -> cst.Module:
            filename = self.context.filename or "<unknown>"
            job = project_job(filename)
            result = engine.run_text(
                tree.code,
                [rule],
                fix=True,
                unsafe_fixes=self.unsafe_fixes or job.unsafe_fixes,
                filename=filename,
                options=job.options,
            )
            for d in result.diagnostics:
                hint = " (fixable with --unsafe-fixes)" if d.fix_safety is not None else ""
                self.warn(f"{filename}:{d.line}:{d.column + 1}: {d.code} {d.message}{hint}")
            if result.text == tree.code:
                raise SkipFile(f"no {rule.code} fix applies")
            return cst.parse_module(result.text, config=tree.config_for_parsing)

    Command.__name__ = Command.__qualname__ = command_name(rule)
    Command.__module__ = rule.__module__
    return Command
