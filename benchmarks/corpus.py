"""The real-code corpus: the pinned sources of the big JAX libraries, from the package registry.

The packages are installed once (``pip install --no-deps --target``) into a cache folder outside
the repository; their ``.py`` files are then copied into a work folder, so that runs over the copy
never touch the cache. Used by ``benchmarks/bench.py`` and ``scripts/real_code.py``.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
import sys
import tomllib
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

# Pinned versions, keyed by PyPI name. jax must match the project's test pin (pyproject.toml).
PINS: dict[str, str] = {
    "jax": "0.10.2",
    "flax": "0.12.8",
    "optax": "0.2.8",
    "equinox": "0.13.8",
    "dm-haiku": "0.0.17",
    "chex": "0.1.92",
    "numpyro": "0.22.0",
    "orbax-checkpoint": "0.12.8",
}

REPO = Path(__file__).resolve().parent.parent
DEFAULT_CACHE = Path.home() / ".cache" / "jaxfix-real-code"
STAMP = "pins.json"


def normalize(name: str) -> str:
    """PEP 503 normalized project name."""
    return re.sub(r"[-_.]+", "-", name).lower()


def project_jax_pin() -> str | None:
    """The jax version pinned in the project's test extra, if any."""
    data = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    for requirement in data["project"]["optional-dependencies"].get("test", []):
        match = re.fullmatch(r"\s*jax(?:\[[^\]]*\])?\s*==\s*([^\s;]+).*", requirement)
        if match:
            return match.group(1)
    return None


def site_folder(cache: Path) -> Path:
    """The install folder under ``cache``; exits when the pins or the location are wrong."""
    pinned = project_jax_pin()
    if pinned != PINS["jax"]:
        raise SystemExit(f"error: PINS['jax'] is {PINS['jax']} but pyproject.toml pins {pinned}")
    site = cache.expanduser().resolve() / "site"
    if site.is_relative_to(REPO):
        raise SystemExit(f"error: the cache {site} must be outside the repository")
    return site


def install(site: Path) -> None:
    """Install the pinned packages into ``site`` unless it already holds exactly them."""
    stamp = site / STAMP
    if stamp.is_file() and json.loads(stamp.read_text(encoding="utf-8")) == PINS:
        return
    if site.exists():
        shutil.rmtree(site)
    site.mkdir(parents=True)
    command = [
        sys.executable,
        "-m",
        "pip",
        "install",
        "--quiet",
        "--disable-pip-version-check",
        "--no-deps",
        "--no-compile",
        "--target",
        str(site),
        *(f"{name}=={version}" for name, version in PINS.items()),
    ]
    print(f"installing {len(PINS)} packages into {site} ...", file=sys.stderr)
    subprocess.run(command, check=True)
    stamp.write_text(json.dumps(PINS, indent=2) + "\n", encoding="utf-8")


def package_files(site: Path) -> dict[str, list[Path]]:
    """The ``.py`` files (relative to ``site``) that each pinned distribution installed."""
    found: dict[str, list[Path]] = {}
    for dist in metadata.distributions(path=[str(site)]):
        name = normalize(dist.metadata["Name"])
        if name not in PINS:
            continue
        if dist.version != PINS[name]:
            raise SystemExit(f"{name}: installed {dist.version}, pinned {PINS[name]}")
        files = [Path(str(f)) for f in dist.files or [] if str(f).endswith(".py")]
        found[name] = sorted(f for f in files if ".." not in f.parts and (site / f).is_file())
    missing = sorted(set(PINS) - set(found))
    if missing:
        raise SystemExit(f"not installed in {site}: {', '.join(missing)}")
    return found


@dataclass
class Corpus:
    """The copied files: path relative to the work folder -> package, original bytes."""

    root: Path
    package: dict[str, str] = field(default_factory=dict)
    original: dict[str, bytes] = field(default_factory=dict)

    def snapshot(self) -> dict[str, str]:
        """sha256 of every file as it is now ('<missing>' when it is gone)."""
        hashes: dict[str, str] = {}
        for rel in self.original:
            path = self.root / rel
            hashes[rel] = sha(path.read_bytes()) if path.is_file() else "<missing>"
        return hashes

    @property
    def lines(self) -> int:
        return sum(data.count(b"\n") for data in self.original.values())


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def copy_sources(site: Path, root: Path, copies: int = 1) -> Corpus:
    """Copy each package's files to ``root/<package>/<path in site-packages>`` (``copies`` > 1
    repeats the whole corpus under ``root/copy<N>/``, to measure how cost grows)."""
    corpus = Corpus(root)
    files = package_files(site)
    for copy in range(copies):
        base = Path(f"copy{copy}") if copies > 1 else Path()
        for name, paths in files.items():
            for path in paths:
                rel = (base / name / path).as_posix()
                data = (site / path).read_bytes()
                target = root / rel
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(data)
                corpus.package[rel] = name
                corpus.original[rel] = data
    return corpus
