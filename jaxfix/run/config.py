"""`[tool.jaxfix]` in `pyproject.toml`: finding, reading and validating a project's settings,
and resolving them (with the command line's overrides) into what to do with each file.

The settings of a file come from the nearest `pyproject.toml` at or above it that has a
`[tool.jaxfix]` table (or the one `--config` names); paths and patterns in it are relative to
that file's folder. Unknown keys and bad values are errors naming the file and the key.
Free of LibCST: rule selectors are checked against the registry only when needed.
"""

from __future__ import annotations

import json
import os
import re
import tomllib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cached_property
from pathlib import Path
from typing import Any, TypeVar

from pathspec import GitIgnoreSpec

from jaxfix.models.edits import EditsWanted
from jaxfix.models.sinks import OPTION_KINDS, Sink, SinkKind, project_sink
from jaxfix.rules.registry import (
    find_info,
    opt_in_left_off,
    suggestion,
    unknown_selectors,
)
from jaxfix.run.job import Job
from jaxfix.run.options import Options

T = TypeVar("T")
PYPROJECT = "pyproject.toml"
# The tables under `[tool.jaxfix]`, as error messages name them.
RULES = "tool.jaxfix.rules"
PER_FILE_IGNORES = "tool.jaxfix.per-file-ignores"
SINKS = "tool.jaxfix.sinks"
# Folders skipped when walking (besides hidden ones, virtual environments and .gitignore'd ones).
DEFAULT_EXCLUDE = ("build", "dist", "_build", "buck-out", "__pypackages__")


class ConfigError(Exception):
    """A configuration file that cannot be used: one line naming the file and the key."""


@dataclass(frozen=True)
class Config:
    """The settings of one `[tool.jaxfix]` table, as written (defaults where absent)."""

    path: Path | None = None  # the pyproject.toml; None for the defaults
    select: tuple[str, ...] | None = None  # None: every rule
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()
    exclude: tuple[str, ...] = DEFAULT_EXCLUDE
    extend_exclude: tuple[str, ...] = ()
    force_exclude: bool = False
    respect_gitignore: bool = True
    fixable: tuple[str, ...] | None = None  # None: every rule
    unfixable: tuple[str, ...] = ()
    unsafe_fixes: bool = False
    transforms: tuple[str, ...] = ()
    rules: tuple[tuple[str, str, tuple[str, ...]], ...] = ()  # (rule selector, option, values)
    sinks: tuple[Sink, ...] = ()  # `[tool.jaxfix.sinks]`

    def sink_table(self) -> tuple[Sink, ...]:
        """The project's sinks: `[tool.jaxfix.sinks]`, then the rule options that are other
        spellings of its keys (`extra-serializers`), each row once."""
        legacy = (
            project_sink(OPTION_KINDS[option], name)
            for _, option, names in self.rules
            if option in OPTION_KINDS
            for name in names
        )
        return tuple(dict.fromkeys((*self.sinks, *legacy)))

    @property
    def root(self) -> Path:
        """The folder patterns are relative to: the config file's, else the current one."""
        return self.path.parent if self.path is not None else Path.cwd()

    @cached_property
    def _base(self) -> str:
        """`root`, absolute, with a separator at the end (fixed for the run)."""
        return os.path.join(os.path.abspath(self.root), "")

    def _relative(self, path: Path) -> str | None:
        """`path` relative to `root` with forward slashes; None when it is not under `root`."""
        full = os.path.join(os.path.abspath(path), "")
        if not full.startswith(self._base):
            return None
        return full[len(self._base) : -1].replace(os.sep, "/") or "."

    @cached_property
    def _excludes(self) -> GitIgnoreSpec:
        return GitIgnoreSpec.from_lines([*self.exclude, *self.extend_exclude])

    def excludes(self, path: Path, below: Path | None = None) -> bool:
        """Whether `exclude` / `extend-exclude` name `path` or a folder above it; with `below`
        (a folder given on the command line, which is walked even when excluded), only the
        folders under it count."""
        relative = self._relative(path)
        if relative is None:
            return False
        parts = relative.split("/")
        start = 1
        if below is not None:
            base = self._relative(below)
            start = 1 + (len(base.split("/")) if base is not None and base != "." else 0)
        # A folder's match covers what is inside it: only a match of its own counts, so that a
        # folder named on the command line is walked even when it is excluded.
        inherited = False
        for end in range(1, len(parts) + 1):
            matched = self._matches("/".join(parts[:end]) + ("" if end == len(parts) else "/"))
            if matched and not inherited and end >= start:
                return True
            inherited = matched
        return False

    @cached_property
    def _seen(self) -> dict[str, bool]:
        return {}

    def _matches(self, relative: str) -> bool:
        """Whether the exclude patterns match `relative` (a folder ends with `/`); memoized, as
        every file of a folder asks about the same folders."""
        if relative not in self._seen:
            self._seen[relative] = self._excludes.match_file(relative)
        return self._seen[relative]

    @cached_property
    def _per_file_specs(self) -> list[tuple[GitIgnoreSpec, tuple[str, ...]]]:
        return [
            (GitIgnoreSpec.from_lines([p]), selectors) for p, selectors in self.per_file_ignores
        ]

    def ignored_for(self, path: Path) -> tuple[str, ...]:
        """The selectors `per-file-ignores` names for `path`."""
        relative = self._relative(path) if self.per_file_ignores else None
        if relative is None:
            return ()
        return tuple(
            selector
            for spec, selectors in self._per_file_specs
            if spec.match_file(relative)
            for selector in selectors
        )

    def selectors(self) -> list[tuple[str, str, str]]:
        """Every rule selector the file uses, with the table and key it is under."""
        found = [("tool.jaxfix", key, s) for key, values in self._selector_keys() for s in values]
        found += [
            (PER_FILE_IGNORES, table_name(p), s)
            for p, values in self.per_file_ignores
            for s in values
        ]
        return found

    def _selector_keys(self) -> list[tuple[str, Sequence[str]]]:
        return [
            ("select", self.select or ()),
            ("extend-select", self.extend_select),
            ("ignore", self.ignore),
            ("fixable", self.fixable or ()),
            ("unfixable", self.unfixable),
        ]


@dataclass(frozen=True)
class Overrides:
    """What the command line sets; None means "as the configuration says"."""

    select: tuple[str, ...] | None = None
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    unsafe_fixes: bool | None = None
    exclude: tuple[str, ...] | None = None
    extend_exclude: tuple[str, ...] = ()
    force_exclude: bool | None = None
    respect_gitignore: bool | None = None

    def apply(self, config: Config) -> Config:
        """`config` with these overrides: `--select` and `--exclude` replace, the others add."""
        return replace(
            config,
            select=self.select if self.select is not None else config.select,
            extend_select=(*config.extend_select, *self.extend_select),
            ignore=(*config.ignore, *self.ignore),
            unsafe_fixes=_pick(self.unsafe_fixes, config.unsafe_fixes),
            exclude=self.exclude if self.exclude is not None else config.exclude,
            extend_exclude=(*config.extend_exclude, *self.extend_exclude),
            force_exclude=_pick(self.force_exclude, config.force_exclude),
            respect_gitignore=_pick(self.respect_gitignore, config.respect_gitignore),
        )


def _pick(override: bool | None, value: bool) -> bool:
    return value if override is None else override


def job_for(config: Config, path: Path, *, fix: bool, edits: EditsWanted = False) -> Job:
    """What to do with the file at `path` under `config`."""
    return Job(
        select=config.select or (),
        extend_select=config.extend_select,
        ignore=(*config.ignore, *config.ignored_for(path)),
        fix=fix,
        unsafe_fixes=config.unsafe_fixes,
        edits=edits,
        options=Options(
            transforms=config.transforms,
            rule_options=config.rules,
            sinks=config.sink_table(),
            fixable=config.fixable,
            unfixable=config.unfixable,
        ),
    )


class ConfigFinder:
    """The configuration of each file: the nearest `pyproject.toml` with `[tool.jaxfix]` above
    it, or the forced one; each file read once, each folder looked up once."""

    def __init__(self, overrides: Overrides, forced: Path | None = None, isolated: bool = False):
        self.overrides = overrides
        self._forced = forced
        self._isolated = isolated
        self._by_folder: dict[Path, Config] = {}
        self._by_name: dict[str, Config] = {}  # the same, by name: no Path made per file
        self._loaded: dict[Path, Config] = {}
        self._defaults = overrides.apply(Config())
        self._defaults_used = False

    def for_path(self, path: Path) -> Config:
        """The settings (with the overrides) that apply to `path` (a file or a folder)."""
        if self._isolated:
            self._defaults_used = True
            return self._defaults
        if self._forced is not None:
            return self._load(self._forced)
        folder = Path(os.path.abspath(path))
        return self._for_folder(folder if folder.is_dir() else folder.parent)

    def for_file(self, path: Path) -> Config:
        """The settings of a file found by walking (known to be one: nothing to ask the
        file system)."""
        if self._isolated or self._forced is not None:
            return self.for_path(path)
        folder = os.path.dirname(os.path.abspath(path))
        if folder not in self._by_name:
            self._by_name[folder] = self._for_folder(Path(folder))
        return self._by_name[folder]

    def _for_folder(self, folder: Path) -> Config:
        if folder not in self._by_folder:
            candidate = folder / PYPROJECT
            if candidate.is_file() and _has_table(candidate):
                self._by_folder[folder] = self._load(candidate)
            elif folder.parent == folder:
                self._defaults_used = True
                self._by_folder[folder] = self._defaults
            else:
                self._by_folder[folder] = self._for_folder(folder.parent)
        return self._by_folder[folder]

    def _load(self, path: Path) -> Config:
        if path not in self._loaded:
            self._loaded[path] = self.overrides.apply(load(path))
        return self._loaded[path]

    def loaded(self) -> list[Config]:
        """Every configuration file read so far."""
        return list(self._loaded.values())

    def used(self) -> list[Config]:
        """Every setting handed out so far: the files', and the defaults (with the command
        line's overrides) where no file applies."""
        return self.loaded() + ([self._defaults] if self._defaults_used else [])


def project_root(forced: Path | None = None, isolated: bool = False) -> Path:
    """The folder of the `pyproject.toml` that configures a run started here (`forced`, else
    the nearest one with `[tool.jaxfix]` at or above the current folder); the current folder
    when none does. The result cache lives there, whichever subfolder the run starts from."""
    here = Path.cwd()
    if isolated:
        return here
    if forced is not None:
        return Path(os.path.abspath(forced)).parent
    for folder in (here, *here.parents):
        candidate = folder / PYPROJECT
        if candidate.is_file() and _has_table(candidate):
            return folder
    return here


def _has_table(path: Path) -> bool:
    try:
        return "jaxfix" in _read(path).get("tool", {})
    except ConfigError:
        return True  # let `load` report it


def _read(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise ConfigError(f"{path}: cannot read: {error.strerror or error}") from error
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
        raise ConfigError(f"{path}: invalid TOML: {error}") from error


def load(path: Path) -> Config:
    """The `[tool.jaxfix]` table of the file at `path` (a missing table gives the defaults)."""
    table = _read(path).get("tool", {}).get("jaxfix", {})
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: [tool.jaxfix] must be a table")
    values: dict[str, Any] = {}
    for key, raw in table.items():
        parse = _KEYS.get(key)
        if parse is None:
            raise ConfigError(
                f"{path}: [tool.jaxfix] unknown key `{key}`{did_you_mean(key, _KEYS)}"
            )
        try:
            values[key.replace("-", "_")] = parse(raw)
        except _Nested as error:
            raise ConfigError(f"{path}: [{error.table}] {error}") from error
        except ValueError as error:
            raise ConfigError(f"{path}: [tool.jaxfix] `{key}`: {error}") from error
    return Config(path=path, **values)


class _Nested(ValueError):
    """A problem in a table under `[tool.jaxfix]`: the message names the key, `table` the
    table (`tool.jaxfix.rules.JF102`)."""

    def __init__(self, table: str, message: str) -> None:
        super().__init__(message)
        self.table = table


def table_name(*keys: str) -> str:
    """A TOML table's dotted name, quoting the keys that are not bare (`"tests/**"`)."""
    return ".".join(k if _BARE_KEY.fullmatch(k) else json.dumps(k) for k in keys)


_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


def _strings(raw: object) -> tuple[str, ...]:
    if not isinstance(raw, list) or not all(isinstance(item, str) for item in raw):
        raise ValueError(f"expected a list of strings, got {_shown(raw)}")
    return tuple(raw)


def _boolean(raw: object) -> bool:
    if not isinstance(raw, bool):
        raise ValueError(f"expected true or false, got {_shown(raw)}")
    return raw


def _dotted_names(raw: object) -> tuple[str, ...]:
    names = _strings(raw)
    for name in names:
        if not all(part.isidentifier() for part in name.split(".")) or "." not in name:
            raise ValueError(f"expected dotted names like `my_lib.compiled`, got {name!r}")
    return names


def _per_file_ignores(raw: object) -> tuple[tuple[str, tuple[str, ...]], ...]:
    if not isinstance(raw, dict):
        raise ValueError(f"expected a table of pattern = [rules], got {_shown(raw)}")
    return tuple(
        (str(pattern), _nested(_strings, selectors, PER_FILE_IGNORES, str(pattern)))
        for pattern, selectors in raw.items()
    )


def _rule_options(raw: object) -> tuple[tuple[str, str, tuple[str, ...]], ...]:
    if not isinstance(raw, dict):
        raise ValueError(f"expected tables like [{RULES}.JF101], got {_shown(raw)}")
    found = []
    for rule, options in raw.items():
        if not isinstance(options, dict):
            raise _Nested(RULES, f"`{rule}`: expected a table of options, got {_shown(options)}")
        for option, values in options.items():
            table = table_name(*RULES.split("."), str(rule))
            try:
                found.append((str(rule), str(option), _dotted_names(values)))
            except ValueError as error:
                # A misspelt rule or option is the likelier mistake: name it first.
                rule_option_problem(table, str(rule), str(option))
                raise _Nested(table, f"`{option}`: {error}") from error
    return tuple(found)


def _sinks(raw: object) -> tuple[Sink, ...]:
    if not isinstance(raw, dict):
        raise ValueError(f"expected a table of kind = [callables], got {_shown(raw)}")
    found: list[Sink] = []
    for key, names in raw.items():
        kind = _sink_kind(str(key))
        found += (project_sink(kind, name) for name in _nested(_dotted_names, names, SINKS, kind))
    return tuple(found)


def _sink_kind(key: str) -> SinkKind:
    """The kind a `[tool.jaxfix.sinks]` key names, else `_Nested` naming the close one."""
    kinds = [kind.value for kind in SinkKind]
    if key not in kinds:
        listed = ", ".join(f"`{kind}`" for kind in kinds)
        raise _Nested(
            SINKS, f"unknown kind `{key}`{did_you_mean(key, kinds) or f' (kinds: {listed})'}"
        )
    return SinkKind(key)


def _nested(parse: Callable[[object], T], raw: object, table: str, key: str) -> T:
    try:
        return parse(raw)
    except ValueError as error:
        raise _Nested(table, f"`{table_name(key)}`: {error}") from error


def _shown(raw: object) -> str:
    text = repr(raw)
    return text if len(text) <= 40 else text[:37] + "..."


_KEYS: Mapping[str, Callable[[object], Any]] = {
    "select": _strings,
    "extend-select": _strings,
    "ignore": _strings,
    "per-file-ignores": _per_file_ignores,
    "exclude": _strings,
    "extend-exclude": _strings,
    "force-exclude": _boolean,
    "respect-gitignore": _boolean,
    "fixable": _strings,
    "unfixable": _strings,
    "unsafe-fixes": _boolean,
    "transforms": _dotted_names,
    "rules": _rule_options,
    "sinks": _sinks,
}


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """` (did you mean `X`?)` for the choice closest to a misspelt `word`, else ""."""
    import difflib

    close = difflib.get_close_matches(word, list(choices), n=1)
    return f" (did you mean `{close[0]}`?)" if close else ""


def validate(configs: Iterable[Config]) -> None:
    """Raise ConfigError for a selector that names no rule, or an option no rule has."""
    for config in configs:
        where = config.path or "command line"
        for table, key, selector in config.selectors():
            if unknown_selectors([selector]):
                hint = suggestion(selector)
                raise ConfigError(
                    f"{where}: [{table}] `{key}`: unknown rule `{selector}`"
                    + (f" (did you mean `{hint}`?)" if hint else "")
                )
        for name, option, _ in config.rules:
            try:
                rule_option_problem(table_name(*RULES.split("."), name), name, option)
            except _Nested as error:
                raise ConfigError(f"{where}: [{error.table}] {error}") from error


def rule_option_problem(table: str, rule_name: str, option: str) -> None:
    """Raise `_Nested` when `rule_name` names no rule or `option` is none of its options."""
    rule = find_info(rule_name)
    if rule is None:
        hint = suggestion(rule_name, with_all=False)
        close = f" (did you mean `{hint}`?)" if hint else ""
        raise _Nested(RULES, f"unknown rule `{rule_name}`{close}")
    if option not in rule.options:
        hint = did_you_mean(option, rule.options)
        known_options = ", ".join(f"`{o}`" for o in rule.options) or "none"
        raise _Nested(
            table,
            f"unknown option `{option}`"
            + (hint or f" (options of {rule.code} {rule.name}: {known_options})"),
        )


def opt_in_notes(configs: Iterable[Config]) -> list[str]:
    """One warning per opt-in rule that a prefix or `ALL` seems to select but leaves off (it
    runs only when named), for the settings in use."""
    notes: dict[str, None] = {}
    for config in configs:
        for selector, rule in opt_in_left_off(
            config.select or (), config.ignore, config.extend_select
        ):
            notes[
                f"`{selector}` leaves the opt-in rule {rule.code} ({rule.name}) off: it runs only"
                f" when named, e.g. `--extend-select {rule.code}`"
            ] = None
    return list(notes)
