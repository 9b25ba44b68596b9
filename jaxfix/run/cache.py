"""The result cache: findings reused while the files' bytes, jaxfix's own code and the
settings stay the same.

JSON files per version of jaxfix's code in the cache folder (`.jaxfix_cache` at the project's
root by default: the folder of the `pyproject.toml` that configures the run, else the current
one):

- `<code>.runs.json`, small, all that a run with nothing to analyse reads: each file's digest
  with the size and mtime it had (`jaxfix.run.stamps`), the latest runs by their files and jobs
  (each file's content, findings, and the jobs it was analysed with in turn, each with the
  digest of what it told the run: `RunRecord`), and the settings already validated;
- `<code>.files/<shard>.json`, read only when some file of the shard must be looked up alone:
  for each file, its findings and what it tells the run of its calls into other modules, under
  each job it was analysed with (one per round across modules, see `jaxfix.run.batch`, with what
  that round gave it), with the digest of its content. The files are spread over `SHARDS`
  shards by their path, so that a run after a one-file edit rewrites a few small files, not
  the results of the whole project (6 MB on the benchmark's corpus, a tenth of a second to
  write).

Each is written atomically at the end of a run that changed it; a corrupt or foreign file is
ignored (the run is only slower). Only files analysed without error and left unchanged are
stored.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib.util
import json
import os
import shutil
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jaxfix import __version__
from jaxfix.analysis.project import ModuleFacts
from jaxfix.models.diagnostic import Diagnostic, FixSafety, TextEdit
from jaxfix.run.stamps import Stamps, digest

DEFAULT_FOLDER = Path(".jaxfix_cache")
FORMAT = 8
SHARDS = 64
# Results kept per file: a file that other modules concern is analysed under several jobs (alone,
# then with what the run tells it in each round, see `jaxfix.run.batch`); a warm run needs them all.
JOBS_PER_FILE = 12
CODE_SUFFIXES = (".py", ".tsv", ".json")  # jaxfix's files that its results depend on
RUNS_KEPT = 8  # runs over other paths or settings remembered besides the latest
_TAG = "Signature: 8a477f597d28d172789f06886806bc55\n# jaxfix's result cache\n"


def code_fingerprint() -> str:
    """jaxfix's version plus the size and mtime of every module and model file of jaxfix and
    the rules, so that an edited rule or analysis (in a development checkout) never reads
    stale results."""
    parts = [__version__, str(FORMAT)]
    for package in ("jaxfix", "jaxfix.codemods"):
        spec = importlib.util.find_spec(package)
        for folder in (spec.submodule_search_locations or []) if spec else []:
            for path in sorted(Path(folder).rglob("*")):
                if path.suffix in CODE_SUFFIXES:
                    stat = path.stat()
                    parts.append(f"{path}:{stat.st_size}:{stat.st_mtime_ns}")
    return digest("\n".join(parts).encode())


@dataclass(frozen=True)
class Cached:
    """A file's findings under one job, what it tells the run, and the digest of that."""

    diagnostics: list[Diagnostic]
    facts: ModuleFacts
    told: str


@dataclass(frozen=True)
class RunRecord:
    """What a run read and found: per file (in the run's order), the digest of its content,
    its findings, and its rounds: each job it was analysed with in turn, with the digest of
    the facts that analysis told the run (`Cached.told`)."""

    digests: list[str]
    findings: list[list[Diagnostic]]
    rounds: list[list[tuple[str, str]]]


class Cache:
    """The cache of one version of jaxfix's code, read at the start of a run (the files' part
    only when a file is looked up) and saved at its end."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        code = code_fingerprint()
        self._runs_path = folder / f"{code}.runs.json"
        self._shards_folder = folder / f"{code}.files"
        runs = _load(self._runs_path)
        self.stamps = Stamps(_table(runs, "stamps"))
        self._runs: dict[str, Any] = _table(runs, "runs")
        self._notes: dict[str, Any] = _table(runs, "valid")  # settings digest -> warnings
        self._shards: dict[str, dict[str, Any]] = {}  # shard name -> file path -> records
        self._dirty_shards: set[str] = set()
        self._runs_dirty = False

    def run(self, key: str) -> RunRecord | None:
        """What the latest run of `key` read, found and analysed (None if unknown or foreign)."""
        run = self._runs.get(key)
        if not isinstance(run, dict):
            return None
        try:
            digests, jobs = list(run["digests"]), list(run["jobs"])
            found = {int(i): [_diagnostic(d) for d in items] for i, items in run["found"].items()}
            rounds = [[(jobs[job], facts) for job, facts in file] for file in run["rounds"]]
        except (AttributeError, IndexError, KeyError, TypeError, ValueError):
            return None
        if len(rounds) != len(digests):
            return None
        findings = [found.get(i, []) for i in range(len(digests))]
        return RunRecord(digests, findings, rounds)

    def record(self, key: str, run: RunRecord) -> None:
        """Remember what a run of `key` read, found and analysed, for `run`."""
        jobs = sorted({job for file in run.rounds for job, _ in file})
        index = {job: i for i, job in enumerate(jobs)}
        plain = {
            "digests": list(run.digests),
            "found": {
                str(i): [_plain(d) for d in items] for i, items in enumerate(run.findings) if items
            },
            "jobs": jobs,
            "rounds": [[[index[job], facts] for job, facts in file] for file in run.rounds],
        }
        if self._runs.pop(key, None) != plain:
            self._runs_dirty = True
        self._runs[key] = plain  # the latest last
        for old in list(self._runs)[: -RUNS_KEPT - 1]:
            del self._runs[old]

    def lookup(self, path: Path, job: str) -> Cached | None:
        """The findings stored for `path` under this job (`Job.key`), and what it tells of its
        calls into other modules, if its content is still what was analysed."""
        entry = self._record(path, job)
        if entry is None or self.digest(path) != entry.get("digest"):
            return None
        try:
            diagnostics = [_diagnostic(item) for item in entry["diagnostics"]]
            return Cached(diagnostics, ModuleFacts.from_plain(entry["facts"]), entry["told"])
        except (KeyError, TypeError, ValueError):
            return None

    def options(self, path: Path, job: str) -> dict[str, Any] | None:
        """The options of the run that `path` was analysed with under this job, as `store`
        got them, whatever its content then."""
        entry = self._record(path, job)
        options = entry.get("options") if entry is not None else None
        return options if isinstance(options, dict) else None

    def store(
        self,
        path: Path,
        job: str,
        content_digest: str,
        diagnostics: Iterable[Diagnostic],
        facts: ModuleFacts,
        options: dict[str, Any],
    ) -> str:
        """Keep the findings and facts of `path` analysed under this job (`Job.key`), with the
        job's options of the run (plain values); returns the digest of the facts."""
        key = os.path.abspath(path)
        plain_facts = facts.plain()
        told = digest(json.dumps(facts.told(plain_facts), sort_keys=True).encode())
        record = {
            "job": job,
            "digest": content_digest,
            "diagnostics": [_plain(d) for d in diagnostics],
            "facts": plain_facts,
            "told": told,
            "options": options,
        }
        entries = self._shard(key)
        older = [r for r in entries.get(key, ()) if isinstance(r, dict) and r.get("job") != job]
        entries[key] = [record, *older][:JOBS_PER_FILE]
        self._dirty_shards.add(_shard_name(key))
        return told

    def digest(self, path: Path) -> str | None:
        """The digest of the file's content now (its size and mtime trusted as `Stamps` says)."""
        return self.stamps.digest(os.path.abspath(path))

    def is_valid(self, settings: str) -> bool:
        """Whether these settings were validated by an earlier run (which needs the rules)."""
        return digest(settings.encode()) in self._notes

    def mark_valid(self, settings: str, notes: Iterable[str] = ()) -> None:
        """Remember that these settings are valid, with the warnings their validation gave."""
        self._notes[digest(settings.encode())] = list(notes)
        self._runs_dirty = True

    def notes(self, settings: str) -> list[str]:
        """The warnings that validating these settings gave."""
        notes = self._notes.get(digest(settings.encode()), [])
        return [n for n in notes if isinstance(n, str)] if isinstance(notes, list) else []

    def save(self) -> None:
        """Write what changed, atomically; a cache that cannot be written is silently skipped."""
        for name in sorted(self._dirty_shards):
            _write(self.folder, self._shard_path(name), {"files": self._shards[name]})
        if self._runs_dirty or self.stamps.changed:
            runs = {"stamps": self.stamps.known, "runs": self._runs, "valid": self._notes}
            _write(self.folder, self._runs_path, runs)
        self._dirty_shards.clear()
        self._runs_dirty = self.stamps.changed = False

    def _record(self, path: Path, job: str) -> dict[str, Any] | None:
        key = os.path.abspath(path)
        records = self._shard(key).get(key)
        return next((r for r in records or () if isinstance(r, dict) and r.get("job") == job), None)

    def _shard(self, key: str) -> dict[str, Any]:
        """The records of the files of `key`'s shard, read when first asked for."""
        name = _shard_name(key)
        records = self._shards.get(name)
        if records is None:
            records = self._shards[name] = _table(_load(self._shard_path(name)), "files")
        return records

    def _shard_path(self, name: str) -> Path:
        return self._shards_folder / f"{name}.json"


def _shard_name(key: str) -> str:
    return f"{int(digest(key.encode())[:8], 16) % SHARDS:02d}"


def clean(folder: Path) -> bool:
    """Remove the cache folder; False when there was none. Refuses a folder that is not one."""
    if not folder.exists():
        return False
    if not (folder / "CACHEDIR.TAG").is_file():
        raise OSError(f"{folder} is not a jaxfix cache folder (no CACHEDIR.TAG)")
    shutil.rmtree(folder)
    return True


def _load(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _table(data: dict[str, Any], name: str) -> dict[str, Any]:
    table = data.get(name)
    return table if isinstance(table, dict) else {}


def _write(folder: Path, path: Path, data: dict[str, Any]) -> None:
    """Write `data` to `path` through a temporary file and a rename: never half a file."""
    with contextlib.suppress(OSError):
        _prepare(folder)
        path.parent.mkdir(exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".", suffix=".tmp")
        try:
            with open(fd, "w", encoding="utf-8") as handle:
                # `dumps`, not `dump`: only a whole-object encoding takes json's C encoder.
                handle.write(json.dumps(data, separators=(",", ":")))
            os.replace(tmp, path)
        finally:
            with contextlib.suppress(OSError):
                os.unlink(tmp)


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
    related = tuple((line, column) for line, column in plain.get("related", ()))
    return Diagnostic(
        **{
            **plain,
            "fix_safety": FixSafety(safety) if safety else None,
            "edits": edits,
            "related": related,
        }
    )
