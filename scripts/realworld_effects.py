"""Whether `apply` keeps the effects of the real-world cases it fixes (issue #48).

    .venv/bin/python scripts/realworld_effects.py [CASES] [--jaxfix .venv/bin/jaxfix]

For every positive case (`pos_*.py`, or a `pos_*` folder with a `main.py`) of CASES (default
`../shared/realworld/cases`): `jaxfix apply --unsafe-fixes` on a copy; where it changed the
case, the original runs with jit disabled (its values concrete: what the author meant) and
the fixed copy runs with its host callbacks deferred (as on an accelerator), both in the
proof runner (`jaxfix.proofs.cases`), and what they printed, logged and wrote is compared
(`proofs.effect_differences`). Prints one line per changed case and the counts; exits 1 when
a fixed case that runs has other effects than its concrete run.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from jaxfix.proofs.cases import Callbacks, effect_differences, run_programs  # noqa: E402


def entry(case: Path) -> Path:
    return case / "main.py" if case.is_dir() else case


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cases", nargs="?", default=str(ROOT.parent / "shared/realworld/cases"))
    parser.add_argument("--jaxfix", default=str(ROOT / ".venv/bin/jaxfix"))
    args = parser.parse_args()
    cases = sorted(p for p in Path(args.cases).iterdir() if p.name.startswith("pos_"))
    with tempfile.TemporaryDirectory(prefix="jaxfix-rw-") as work:
        before, after = Path(work) / "before", Path(work) / "after"
        for folder in (before, after):
            folder.mkdir()
            for case in cases:
                copy = shutil.copytree if case.is_dir() else shutil.copy
                copy(case, folder / case.name)
        command = [args.jaxfix, "apply", "--unsafe-fixes", "--no-cache", str(after)]
        subprocess.run(command, capture_output=True, text=True, check=False)
        changed = [case.name for case in cases if _changed(before / case.name, after / case.name)]
        programs = [entry(side / name) for name in changed for side in (before, after)]
        modes = [Callbacks.CONCRETE, Callbacks.DEFERRED] * len(changed)
        runs = run_programs(programs, callbacks=modes)
    counts = {"changed": len(changed), "same effects": 0, "other effects": 0, "skipped": 0}
    for index, name in enumerate(changed):
        concrete, fixed = runs[2 * index], runs[2 * index + 1]
        if concrete.error is not None or fixed.error is not None:
            counts["skipped"] += 1
            which = "concrete run" if concrete.error is not None else "fixed run"
            error = (concrete.error or fixed.error or ("", ""))[0]
            print(f"{name}: skipped ({which} raised {error})")
            continue
        found = effect_differences(concrete, fixed)
        counts["other effects" if found else "same effects"] += 1
        print(f"{name}: {'; '.join(found) if found else 'same effects'}")
    print(", ".join(f"{key} {value}" for key, value in counts.items()))
    return 1 if counts["other effects"] else 0


def _changed(before: Path, after: Path) -> bool:
    """Whether `apply` changed the case (a file, or any module of a folder)."""
    if before.is_file():
        return _text(before) != _text(after)
    return any(_text(f) != _text(after / f.relative_to(before)) for f in before.rglob("*.py"))


def _text(path: Path) -> str:
    return path.read_text(encoding="utf-8") if path.exists() else ""


if __name__ == "__main__":
    sys.exit(main())
