"""The result cache: the findings of each file, reused while its bytes, jaxfix's own code and
the settings stay the same.

One JSON file per version of jaxfix's code in the cache folder (`.jaxfix_cache` in the current
directory by default), mapping each file's absolute path to its latest results: for each, the
digest of the job (selection, options) and of its content, its findings and the calls its
traced code makes into other modules.
It is written atomically at the end of a run; a corrupt or foreign file is ignored (the run is
only slower). Only files analysed without error and left unchanged are stored.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import importlib.util
import json
import os
import shutil
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from jaxfix import __version__
from jaxfix.diagnostic import Diagnostic, FixSafety, TextEdit
from jaxfix.project import ModuleFacts

DEFAULT_FOLDER = Path(".jaxfix_cache")
FORMAT = 3
# Results kept per file: a file that other modules concern is analysed under several jobs (alone,
# then with what the run tells it in each round, see `jaxfix.batch`); a warm run needs them all.
JOBS_PER_FILE = 12
_TAG = "Signature: 8a477f597d28d172789f06886806bc55\n# jaxfix's result cache\n"


def digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


@functools.lru_cache(maxsize=64)
def _job_digest(job_key: str) -> str:
    return digest(job_key.encode())


def code_fingerprint() -> str:
    """jaxfix's version plus the size and mtime of every module of the engine and the rules,
    so that an edited rule (in a development checkout) never reads stale results."""
    parts = [__version__, str(FORMAT)]
    for package in ("jaxfix", "jaxfix.codemods"):
        spec = importlib.util.find_spec(package)
        for folder in (spec.submodule_search_locations or []) if spec else []:
            for path in sorted(Path(folder).glob("*.py")):
                stat = path.stat()
                parts.append(f"{path.name}:{stat.st_size}:{stat.st_mtime_ns}")
    return digest("\n".join(parts).encode())


class Cache:
    """The entries of one version of jaxfix's code, loaded at the start of a run and saved at
    its end. An entry holds the findings of one file under one job (`Job.key`)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.path = folder / f"{code_fingerprint()}.json"
        loaded = self._load()
        self._entries: dict[str, list[dict[str, Any]]] = loaded.get("files", {})
        self._valid: set[str] = set(loaded.get("valid", []))
        notes = loaded.get("notes")
        self._notes: dict[str, list[str]] = notes if isinstance(notes, dict) else {}
        self._dirty = False

    def _load(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_bytes())
        except (OSError, ValueError):
            return {}
        valid = isinstance(data, dict) and isinstance(data.get("files"), dict)
        return data if valid and isinstance(data.get("valid", []), list) else {}

    def lookup(self, path: Path, job_key: str) -> tuple[list[Diagnostic], ModuleFacts] | None:
        """The findings stored for `path` under this job, and what it tells of its calls into
        other modules, if its content is still what was analysed."""
        job = _job_digest(job_key)
        records = self._entries.get(os.path.abspath(path))
        entry = next(
            (r for r in records or () if isinstance(r, dict) and r.get("job") == job), None
        )
        if entry is None:
            return None
        try:
            if digest(Path(path).read_bytes()) != entry["digest"]:
                return None
            diagnostics = [_diagnostic(item) for item in entry["diagnostics"]]
            return diagnostics, ModuleFacts.from_plain(entry["facts"])
        except (OSError, KeyError, TypeError, ValueError):
            return None

    def store(
        self,
        path: Path,
        job_key: str,
        content_digest: str,
        diagnostics: Iterable[Diagnostic],
        facts: ModuleFacts | None = None,
    ) -> None:
        key, job = os.path.abspath(path), _job_digest(job_key)
        record = {
            "job": job,
            "digest": content_digest,
            "diagnostics": [_plain(d) for d in diagnostics],
            "facts": (facts or ModuleFacts()).plain(),
        }
        older = [
            r for r in self._entries.get(key, ()) if isinstance(r, dict) and r.get("job") != job
        ]
        self._entries[key] = [record, *older][:JOBS_PER_FILE]
        self._dirty = True

    def is_valid(self, settings: str) -> bool:
        """Whether these settings were validated by an earlier run (which needs the rules)."""
        return digest(settings.encode()) in self._valid

    def mark_valid(self, settings: str, notes: Iterable[str] = ()) -> None:
        """Remember that these settings are valid, with the warnings their validation gave."""
        key = digest(settings.encode())
        self._valid.add(key)
        if notes:
            self._notes[key] = list(notes)
        self._dirty = True

    def notes(self, settings: str) -> list[str]:
        """The warnings that validating these settings gave."""
        notes = self._notes.get(digest(settings.encode()), [])
        return [n for n in notes if isinstance(n, str)] if isinstance(notes, list) else []

    def save(self) -> None:
        """Write the entries atomically; a cache that cannot be written is silently skipped."""
        if not self._dirty:
            return
        data = {"files": self._entries, "valid": sorted(self._valid), "notes": self._notes}
        with contextlib.suppress(OSError):
            _prepare(self.folder)
            fd, tmp = tempfile.mkstemp(dir=self.folder, prefix=".", suffix=".tmp")
            try:
                with open(fd, "w", encoding="utf-8") as handle:
                    json.dump(data, handle, separators=(",", ":"))
                os.replace(tmp, self.path)
            finally:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
        self._dirty = False


def clean(folder: Path) -> bool:
    """Remove the cache folder; False when there was none. Refuses a folder that is not one."""
    if not folder.exists():
        return False
    if not (folder / "CACHEDIR.TAG").is_file():
        raise OSError(f"{folder} is not a jaxfix cache folder (no CACHEDIR.TAG)")
    shutil.rmtree(folder)
    return True


def _prepare(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    tag = folder / "CACHEDIR.TAG"
    if not tag.exists():
        tag.write_text(_TAG, encoding="utf-8")
        (folder / ".gitignore").write_text("*\n", encoding="utf-8")


def _plain(diagnostic: Diagnostic) -> dict[str, Any]:
    plain = dataclasses.asdict(diagnostic.portable())
    del plain["fix"]
    plain["fix_safety"] = diagnostic.fix_safety.value if diagnostic.fix_safety else None
    return plain


def _diagnostic(plain: dict[str, Any]) -> Diagnostic:
    safety = plain.get("fix_safety")
    edits = tuple(TextEdit(**edit) for edit in plain.get("edits", ()))
    return Diagnostic(
        **{**plain, "fix_safety": FixSafety(safety) if safety else None, "edits": edits}
    )
