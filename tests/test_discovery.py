"""Tests for jaxfix.run.discovery: which files get analysed, and which problems get reported."""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from jaxfix.run.discovery import DiscoveryError, iter_python_files


def touch(root: Path, *names: str) -> None:
    """Create empty files (and their parent directories) under ``root``."""
    for name in names:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x = 1\n")


def found(
    root: Path,
    paths: Sequence[Path] | None = None,
    *,
    respect_gitignore: bool = True,
    extra_excludes: Sequence[str] = (),
) -> list[str]:
    """Return the yielded files as POSIX paths relative to ``root``; fail on any error."""
    walked = paths if paths is not None else [root]
    results = list(
        iter_python_files(
            walked, respect_gitignore=respect_gitignore, extra_excludes=extra_excludes
        )
    )
    errors = [r for r in results if isinstance(r, DiscoveryError)]
    assert errors == []
    return [p.relative_to(root).as_posix() for p in results if isinstance(p, Path)]


def errors_of(paths: Sequence[Path]) -> list[DiscoveryError]:
    """Return only the errors yielded for ``paths``."""
    return [r for r in iter_python_files(paths) if isinstance(r, DiscoveryError)]


def test_only_py_files_in_sorted_order(tmp_path: Path) -> None:
    touch(tmp_path, "b.py", "a.py", "c.pyi", "notes.txt", "pkg/z.py", "pkg/sub/y.py")
    assert found(tmp_path) == ["a.py", "b.py", "pkg/z.py", "pkg/sub/y.py"]
    assert found(tmp_path) == found(tmp_path)


def test_yielded_paths_keep_the_given_root(tmp_path: Path) -> None:
    touch(tmp_path, "pkg/a.py")
    assert list(iter_python_files([tmp_path / "pkg"])) == [tmp_path / "pkg" / "a.py"]


def test_hidden_cache_and_vendor_dirs_are_skipped(tmp_path: Path) -> None:
    touch(
        tmp_path,
        "keep.py",
        ".hidden/a.py",
        ".git/hooks/b.py",
        "__pycache__/c.py",
        "node_modules/d.py",
        "lib/site-packages/e.py",
        ".hidden_file.py",
    )
    assert found(tmp_path) == [".hidden_file.py", "keep.py"]


def test_build_and_dist_are_walked(tmp_path: Path) -> None:
    touch(tmp_path, "build/a.py", "dist/b.py")
    assert found(tmp_path) == ["build/a.py", "dist/b.py"]


def test_virtualenv_is_skipped_whatever_its_name(tmp_path: Path) -> None:
    touch(tmp_path, "env/pyvenv.cfg", "env/lib/x.py", "app/main.py")
    assert found(tmp_path) == ["app/main.py"]


def test_explicit_virtualenv_root_is_walked(tmp_path: Path) -> None:
    touch(tmp_path, "env/pyvenv.cfg", "env/tool.py")
    assert found(tmp_path, [tmp_path / "env"]) == ["env/tool.py"]


def test_root_gitignore(tmp_path: Path) -> None:
    touch(tmp_path, "a.py", "gen_b.py", "out/c.py", "src/d.py")
    (tmp_path / ".gitignore").write_text("gen_*.py\nout/\n")
    assert found(tmp_path) == ["a.py", "src/d.py"]


def test_nested_gitignore_is_relative_to_its_directory(tmp_path: Path) -> None:
    touch(tmp_path, "top.py", "sub/top.py", "sub/x.py", "sub/deep/x.py", "other/x.py")
    (tmp_path / "sub" / ".gitignore").write_text("/top.py\nx.py\n")
    assert found(tmp_path) == ["top.py", "other/x.py"]


def test_deeper_gitignore_can_reinclude(tmp_path: Path) -> None:
    touch(tmp_path, "a/keep.py", "a/drop.py", "b/keep.py")
    (tmp_path / ".gitignore").write_text("*.py\n")
    (tmp_path / "a" / ".gitignore").write_text("!keep.py\n")
    assert found(tmp_path) == ["a/keep.py"]


def test_negation_cannot_reinclude_inside_ignored_dir(tmp_path: Path) -> None:
    touch(tmp_path, "gen/keep.py", "gen/x.py")
    (tmp_path / ".gitignore").write_text("gen/\n!gen/keep.py\n")
    assert found(tmp_path) == []


def test_ancestor_gitignore_up_to_repo_root(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    touch(tmp_path, "proj/src/a.py", "proj/src/a_pb2.py", "proj/src/mid.py")
    (tmp_path / ".gitignore").write_text("*_pb2.py\n")
    (tmp_path / "proj" / ".gitignore").write_text("src/mid.py\n")
    src = tmp_path / "proj" / "src"
    assert found(tmp_path, [src]) == ["proj/src/a.py"]


def test_gitignore_above_repo_root_is_ignored(tmp_path: Path) -> None:
    (tmp_path / ".gitignore").write_text("*.py\n")
    (tmp_path / "repo" / ".git").mkdir(parents=True)
    touch(tmp_path, "repo/a.py")
    assert found(tmp_path, [tmp_path / "repo"]) == ["repo/a.py"]


def test_ancestor_gitignore_needs_a_repo(tmp_path: Path) -> None:
    (tmp_path / ".gitignore").write_text("*.py\n")
    touch(tmp_path, "proj/a.py")
    assert found(tmp_path, [tmp_path / "proj"]) == ["proj/a.py"]


def test_explicit_dir_ignored_by_ancestor_is_still_walked(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / ".gitignore").write_text("build/\n")
    touch(tmp_path, "build/gen.py", "build/sub/skip.py")
    (tmp_path / "build" / ".gitignore").write_text("sub/\n")
    assert found(tmp_path, [tmp_path / "build"]) == ["build/gen.py"]


def test_respect_gitignore_false(tmp_path: Path) -> None:
    touch(tmp_path, "a.py", "b.py")
    (tmp_path / ".gitignore").write_text("b.py\n")
    assert found(tmp_path, respect_gitignore=False) == ["a.py", "b.py"]


def test_extra_excludes_are_relative_to_the_walked_root(tmp_path: Path) -> None:
    touch(tmp_path, "a.py", "tests/t.py", "src/tests/u.py", "src/legacy/v.py", "src/w.py")
    excludes = ["/tests/", "legacy", "*_old.py"]
    assert found(tmp_path, extra_excludes=excludes) == ["a.py", "src/w.py", "src/tests/u.py"]


def test_extra_excludes_apply_without_gitignore(tmp_path: Path) -> None:
    touch(tmp_path, "a.py", "b.py")
    assert found(tmp_path, respect_gitignore=False, extra_excludes=["b.py"]) == ["a.py"]


def test_explicit_file_is_always_yielded(tmp_path: Path) -> None:
    touch(tmp_path, "ignored.py", "script", "data.txt")
    (tmp_path / ".gitignore").write_text("ignored.py\n")
    paths = [tmp_path / "ignored.py", tmp_path / "script", tmp_path / "data.txt"]
    assert found(tmp_path, paths, extra_excludes=["*"]) == ["ignored.py", "script", "data.txt"]


def test_missing_path_yields_error_and_continues(tmp_path: Path) -> None:
    touch(tmp_path, "a.py")
    missing = tmp_path / "nope.py"
    results = list(iter_python_files([missing, tmp_path / "a.py"]))
    assert results == [DiscoveryError(missing, "no such file or directory"), tmp_path / "a.py"]


def test_directory_named_like_a_module_is_walked(tmp_path: Path) -> None:
    touch(tmp_path, "x.py/inner.py", "x.py/readme.txt")
    assert found(tmp_path) == ["x.py/inner.py"]
    assert found(tmp_path, [tmp_path / "x.py"]) == ["x.py/inner.py"]


def test_dir_symlink_loop_is_not_followed(tmp_path: Path) -> None:
    touch(tmp_path, "pkg/a.py")
    (tmp_path / "pkg" / "loop").symlink_to(tmp_path, target_is_directory=True)
    (tmp_path / "pkg" / "self").symlink_to(".", target_is_directory=True)
    assert found(tmp_path) == ["pkg/a.py"]


def test_file_symlink_pointing_outside_is_skipped(tmp_path: Path) -> None:
    touch(tmp_path, "outside/secret.py", "root/a.py")
    (tmp_path / "root" / "link.py").symlink_to(tmp_path / "outside" / "secret.py")
    assert found(tmp_path, [tmp_path / "root"]) == ["root/a.py"]


def test_explicit_symlink_outside_is_yielded(tmp_path: Path) -> None:
    touch(tmp_path, "outside/secret.py")
    link = tmp_path / "link.py"
    link.symlink_to(tmp_path / "outside" / "secret.py")
    assert list(iter_python_files([link])) == [link]


def test_file_symlink_inside_is_yielded_once(tmp_path: Path) -> None:
    touch(tmp_path, "z_real.py")
    (tmp_path / "a_link.py").symlink_to(tmp_path / "z_real.py")
    assert found(tmp_path) == ["a_link.py"]


def test_file_symlink_inside_to_other_name_is_yielded(tmp_path: Path) -> None:
    touch(tmp_path, "data/real.txt")
    (tmp_path / "mod.py").symlink_to(tmp_path / "data" / "real.txt")
    assert found(tmp_path) == ["mod.py"]


def test_file_symlink_to_directory_is_not_followed(tmp_path: Path) -> None:
    touch(tmp_path, "real/a.py")
    (tmp_path / "alias.py").symlink_to(tmp_path / "real", target_is_directory=True)
    assert found(tmp_path) == ["real/a.py"]


def test_broken_and_looping_file_symlinks_are_reported(tmp_path: Path) -> None:
    (tmp_path / "broken.py").symlink_to(tmp_path / "missing.py")
    (tmp_path / "loop_a.py").symlink_to(tmp_path / "loop_b.py")
    (tmp_path / "loop_b.py").symlink_to(tmp_path / "loop_a.py")
    assert list(iter_python_files([tmp_path])) == [
        DiscoveryError(tmp_path / "broken.py", "broken symlink"),
        DiscoveryError(tmp_path / "loop_a.py", "symlink loop"),
        DiscoveryError(tmp_path / "loop_b.py", "symlink loop"),
    ]


def test_explicit_symlink_loop_is_reported(tmp_path: Path) -> None:
    loop = tmp_path / "loop.py"
    loop.symlink_to(loop)
    assert errors_of([loop]) == [DiscoveryError(loop, "symlink loop")]


def test_dedupe_across_overlapping_paths(tmp_path: Path) -> None:
    touch(tmp_path, "pkg/a.py", "pkg/b.py")
    pkg = tmp_path / "pkg"
    paths = [pkg / "a.py", pkg, tmp_path, Path(os.path.relpath(pkg / "b.py"))]
    assert found(tmp_path, paths) == ["pkg/a.py", "pkg/b.py"]


def test_permission_error_is_reported_not_raised(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    touch(tmp_path, "ok/a.py", "locked/b.py")
    locked = tmp_path / "locked"
    real_scandir = os.scandir

    def fake_scandir(path: Path) -> Iterator[os.DirEntry[str]]:
        """Deny access to ``locked`` only."""
        if Path(path) == locked:
            raise PermissionError(13, "Permission denied", str(path))
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", fake_scandir)
    results = list(iter_python_files([tmp_path]))
    assert results == [DiscoveryError(locked, "permission denied"), tmp_path / "ok" / "a.py"]


def test_unreadable_gitignore_is_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    touch(tmp_path, "a.py")
    gitignore = tmp_path / ".gitignore"
    gitignore.write_text("a.py\n")
    real_read_text = Path.read_text

    def fake_read_text(self: Path, *args: object, **kwargs: object) -> str:
        """Deny access to the .gitignore only."""
        if self == gitignore:
            raise PermissionError(13, "Permission denied", str(self))
        return real_read_text(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Path, "read_text", fake_read_text)
    results = list(iter_python_files([tmp_path]))
    assert results == [DiscoveryError(gitignore, "permission denied"), tmp_path / "a.py"]
