"""Find the Python files to analyse.

Explicit file paths are always honoured; directories are walked deterministically for ``*.py``
files and ``*.ipynb`` notebooks while skipping hidden directories, caches, virtual environments
and whatever ``.gitignore`` files (or ``extra_excludes``) exclude. Problems are yielded as
:class:`DiscoveryError` values instead of being raised, so one unreadable directory never aborts
a whole run.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Generator, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from pathspec import GitIgnoreSpec

__all__ = ["DiscoveryError", "iter_python_files"]

SKIPPED_DIR_NAMES = frozenset({"__pycache__", "node_modules", "site-packages"})
VENV_MARKER = "pyvenv.cfg"
GITIGNORE = ".gitignore"
PY_SUFFIXES = (".py", ".ipynb")  # Python files and Jupyter notebooks

_ERRNO_MESSAGES = {
    errno.ENOENT: "no such file or directory",
    errno.ELOOP: "symlink loop",
    errno.EACCES: "permission denied",
    errno.EPERM: "permission denied",
    errno.ENOTDIR: "not a directory",
}


@dataclass(frozen=True)
class DiscoveryError:
    """A path that could not be examined, with a one-line description of why."""

    path: Path
    message: str


@dataclass(frozen=True)
class _IgnoreLayer:
    """The patterns of one ``.gitignore``; ``base`` is its directory relative to the anchor."""

    base: tuple[str, ...]
    spec: GitIgnoreSpec

    def check(self, parts: tuple[str, ...], is_dir: bool) -> bool | None:
        """Return True (ignored), False (re-included by ``!``) or None (no pattern matched)."""
        rel = "/".join(parts[len(self.base) :])
        return self.spec.check_file(rel + "/" if is_dir else rel).include


@dataclass(frozen=True)
class _Dir:
    """A directory waiting to be scanned during a walk."""

    path: Path  # as it will be shown to the user (walked root joined with ``rel``)
    rel: tuple[str, ...]  # parts relative to the walked root
    layers: tuple[_IgnoreLayer, ...]


@dataclass
class _Walk:
    """State shared by one directory walk."""

    real_root: str
    anchor_parts: tuple[str, ...]  # the walked root relative to the ignore anchor
    excludes: GitIgnoreSpec | None
    respect_gitignore: bool
    seen: set[str]


def iter_python_files(
    paths: Sequence[Path],
    *,
    respect_gitignore: bool = True,
    extra_excludes: Sequence[str] = (),
) -> Iterator[Path | DiscoveryError]:
    """Yield each Python file under ``paths`` once, or a DiscoveryError for each problem.

    Explicit files are yielded whatever their suffix or ignore status. An explicit directory is
    always walked, even if an ancestor ``.gitignore`` ignores it (naming it means you want it);
    in that case only the ``.gitignore`` files inside it apply. ``extra_excludes`` are
    gitwildmatch patterns relative to each walked directory.
    """
    seen: set[str] = set()
    excludes = GitIgnoreSpec.from_lines(extra_excludes) if extra_excludes else None
    for path in paths:
        path = Path(path)
        try:
            st = os.stat(path)
        except OSError as exc:
            yield DiscoveryError(path, _missing_message(path, exc))
            continue
        if stat.S_ISDIR(st.st_mode):
            yield from _walk_root(path, excludes, respect_gitignore, seen)
        elif _first_visit(seen, os.path.realpath(path)):
            yield path


def _walk_root(
    root: Path, excludes: GitIgnoreSpec | None, respect_gitignore: bool, seen: set[str]
) -> Iterator[Path | DiscoveryError]:
    """Walk one explicitly given directory without recursion (deep trees cannot overflow)."""
    real_root = os.path.realpath(root)
    anchor = _find_repo_root(real_root) if respect_gitignore else None
    anchor_parts = Path(real_root).relative_to(anchor).parts if anchor else ()
    layers: tuple[_IgnoreLayer, ...] = ()
    if anchor is not None:
        found, errors = _ancestor_layers(anchor, anchor_parts)
        yield from errors
        if not _is_ignored(found, anchor_parts, is_dir=True):
            layers = found
    walk = _Walk(real_root, anchor_parts, excludes, respect_gitignore, seen)
    stack = [_Dir(root, (), layers)]
    while stack:
        subdirs = yield from _scan_dir(walk, stack.pop())
        stack.extend(reversed(subdirs))


def _scan_dir(walk: _Walk, current: _Dir) -> Generator[Path | DiscoveryError, None, list[_Dir]]:
    """Yield the Python files of one directory and return its subdirectories still to walk."""
    entries = _list_dir(current.path)
    if isinstance(entries, DiscoveryError):
        yield entries
        return []
    names = {entry.name for entry in entries}
    if current.rel and VENV_MARKER in names:
        return []
    layers = current.layers
    if walk.respect_gitignore and GITIGNORE in names:
        layer = _load_layer(current.path / GITIGNORE, walk.anchor_parts + current.rel)
        if isinstance(layer, DiscoveryError):
            yield layer
        else:
            layers = (*layers, layer)
    subdirs: list[_Dir] = []
    for entry in entries:
        rel = (*current.rel, entry.name)
        try:
            is_dir = entry.is_dir(follow_symlinks=False)
        except OSError as exc:
            yield DiscoveryError(current.path / entry.name, _os_message(exc))
            continue
        if is_dir:
            if _wanted_dir(walk, layers, rel):
                subdirs.append(_Dir(current.path / entry.name, rel, layers))
        elif entry.name.endswith(PY_SUFFIXES) and not _excluded(walk, layers, rel, is_dir=False):
            yield from _file_entry(walk, entry, current.path / entry.name, rel)
    return subdirs


def _list_dir(path: Path) -> list[os.DirEntry[str]] | DiscoveryError:
    """Return the directory's entries sorted by name (sorting makes runs reproducible)."""
    try:
        with os.scandir(path) as it:
            return sorted(it, key=lambda entry: entry.name)
    except OSError as exc:
        return DiscoveryError(path, _os_message(exc))


def _wanted_dir(walk: _Walk, layers: tuple[_IgnoreLayer, ...], rel: tuple[str, ...]) -> bool:
    """Tell whether a subdirectory should be descended into."""
    name = rel[-1]
    if name.startswith(".") or name in SKIPPED_DIR_NAMES:
        return False
    return not _excluded(walk, layers, rel, is_dir=True)


def _excluded(
    walk: _Walk, layers: tuple[_IgnoreLayer, ...], rel: tuple[str, ...], *, is_dir: bool
) -> bool:
    """Tell whether ``extra_excludes`` or the applicable ``.gitignore`` files exclude ``rel``."""
    if walk.excludes is not None:
        posix = "/".join(rel)
        if walk.excludes.match_file(posix + "/" if is_dir else posix):
            return True
    return _is_ignored(layers, walk.anchor_parts + rel, is_dir=is_dir)


def _is_ignored(layers: tuple[_IgnoreLayer, ...], parts: tuple[str, ...], *, is_dir: bool) -> bool:
    """Apply git precedence: the deepest ``.gitignore`` with a matching pattern decides."""
    for layer in reversed(layers):
        verdict = layer.check(parts, is_dir)
        if verdict is not None:
            return verdict
    return False


def _file_entry(
    walk: _Walk, entry: os.DirEntry[str], path: Path, rel: tuple[str, ...]
) -> Iterator[Path | DiscoveryError]:
    """Yield a ``*.py`` or ``*.ipynb`` entry if it is a regular file (or a symlink to one
    inside the root)."""
    try:
        if entry.is_symlink():
            real = _symlink_target(walk, path)
        elif entry.is_file(follow_symlinks=False):
            real = os.path.join(walk.real_root, *rel)
        else:
            return
    except OSError as exc:
        yield DiscoveryError(path, _missing_message(path, exc))
        return
    if real is not None and _first_visit(walk.seen, real):
        yield path


def _symlink_target(walk: _Walk, path: Path) -> str | None:
    """Return the real path of a file symlink that stays inside the walked root, else None."""
    real = os.path.realpath(path, strict=True)
    if not os.path.isfile(real):
        return None
    if os.path.commonpath([walk.real_root, real]) != walk.real_root:
        return None
    return real


def _load_layer(path: Path, base: tuple[str, ...]) -> _IgnoreLayer | DiscoveryError:
    """Parse one ``.gitignore``; an unreadable one is reported (and then not applied)."""
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError as exc:
        return DiscoveryError(path, _os_message(exc))
    return _IgnoreLayer(base, GitIgnoreSpec.from_lines(lines))


def _ancestor_layers(
    anchor: str, anchor_parts: tuple[str, ...]
) -> tuple[tuple[_IgnoreLayer, ...], list[DiscoveryError]]:
    """Load the ``.gitignore`` files from the repository root down to the walked root's parent."""
    layers: list[_IgnoreLayer] = []
    errors: list[DiscoveryError] = []
    for depth in range(len(anchor_parts)):
        base = anchor_parts[:depth]
        path = Path(anchor, *base, GITIGNORE)
        if not os.path.isfile(path):
            continue
        layer = _load_layer(path, base)
        if isinstance(layer, DiscoveryError):
            errors.append(layer)
        else:
            layers.append(layer)
    return tuple(layers), errors


def _find_repo_root(real_root: str) -> str | None:
    """Return the nearest directory at or above ``real_root`` that contains ``.git``."""
    for candidate in (Path(real_root), *Path(real_root).parents):
        if os.path.lexists(candidate / ".git"):
            return str(candidate)
    return None


def _first_visit(seen: set[str], real: str) -> bool:
    """Record ``real`` and tell whether it had not been yielded before."""
    if real in seen:
        return False
    seen.add(real)
    return True


def _missing_message(path: Path, exc: OSError) -> str:
    """Describe a failed stat, telling a dangling symlink apart from a missing path."""
    if exc.errno == errno.ENOENT and os.path.islink(path):
        return "broken symlink"
    return _os_message(exc)


def _os_message(exc: OSError) -> str:
    """Turn an OSError into a short one-line lowercase message."""
    if exc.errno in _ERRNO_MESSAGES:
        return _ERRNO_MESSAGES[exc.errno]
    text = exc.strerror or str(exc) or type(exc).__name__
    return " ".join(text.lower().split())
