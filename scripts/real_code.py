"""Run jaxfix over the real sources of the big JAX libraries and check it behaves.

The pinned packages (``benchmarks/corpus.py``) are installed once into a cache folder outside the
repository, their ``.py`` files are copied into a fresh temporary folder, and jaxfix runs over
the copy:

1. ``jaxfix check`` (findings before),
2. ``jaxfix apply --diff --unsafe-fixes`` (a dry run: must write nothing),
3. ``jaxfix apply --unsafe-fixes`` (first pass, rewrites the copy),
4. ``jaxfix check`` (findings that remain),
5. ``jaxfix apply --unsafe-fixes`` again (second pass: must change nothing).

Properties checked (the script exits 1 if one fails): every file is processed, with no error
other than files LibCST cannot parse (reported apart); jaxfix never crashes; every changed file
compiles; the dry run writes nothing and its diff names exactly the files the first pass
changes; the second pass changes nothing; every file without findings is byte-identical to its
original. Only the standard library and jaxfix (run as ``python -m jaxfix``) are used.

Usage: ``.venv/bin/python scripts/real_code.py [--keep] [--cache DIR] [--show-findings N]``.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "benchmarks"))

from corpus import DEFAULT_CACHE, PINS, Corpus, copy_sources, install, site_folder  # noqa: E402

FINDING = re.compile(r"^(?P<path>.+?):(?P<line>\d+):(?P<col>\d+): (?P<code>[A-Z]+\d+) (?P<msg>.*)$")
CHECKED = re.compile(r"^Checked (?P<files>\d+) files?: ")
PARSE_ERROR = re.compile(r":\d+:\d+: (?:syntax error|cannot parse): ")
ERROR_KINDS = ("parse", "internal error", "left unchanged", "other")


# --------------------------------------------------------------------------------------------
# Running jaxfix


@dataclass
class Run:
    """One jaxfix invocation over the whole copy."""

    label: str
    returncode: int
    stdout: str
    stderr: str
    seconds: float

    @property
    def error_lines(self) -> list[str]:
        return [line for line in self.stderr.splitlines() if line.startswith("error: ")]

    @property
    def checked_files(self) -> int | None:
        for line in reversed(self.stderr.splitlines()):
            match = CHECKED.match(line)
            if match:
                return int(match.group("files"))
        return None

    @property
    def summary(self) -> str:
        lines = [line for line in self.stderr.splitlines() if CHECKED.match(line)]
        return lines[-1] if lines else "(no summary line)"

    @property
    def crashed(self) -> bool:
        return self.returncode not in (0, 1, 2) or "Traceback (most recent call last)" in (
            self.stderr
        )


def jaxfix(label: str, args: Sequence[str], cwd: Path) -> Run:
    """Run ``python -m jaxfix ARGS --no-cache .`` in ``cwd``."""
    env = {**os.environ, "NO_COLOR": "1", "PYTHONIOENCODING": "utf-8"}
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "jaxfix", *args, "--no-cache", "."],  # every pass analyses
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        encoding="utf-8",
        errors="replace",
        check=False,
    )
    seconds = time.perf_counter() - start
    return Run(label, done.returncode, done.stdout, done.stderr, seconds)


def error_kind(line: str) -> str:
    """Classify one ``error: <path>: ...`` line."""
    if ": internal error: " in line:
        return "internal error"
    if ": left unchanged: " in line:
        return "left unchanged"
    if PARSE_ERROR.search(line):
        return "parse"
    return "other"


def findings(run: Run) -> list[tuple[str, str, str]]:
    """(path, code, whole line) for each finding line of a check run."""
    out: list[tuple[str, str, str]] = []
    for line in run.stdout.splitlines():
        match = FINDING.match(line)
        if match:
            out.append((strip_dot(match.group("path")), match.group("code"), line))
    return out


def strip_dot(path: str) -> str:
    return path[2:] if path.startswith("./") else path


def diff_files(run: Run) -> set[str]:
    """Files named by the ``+++ b/<path>`` headers of a ``--diff`` run."""
    return {
        strip_dot(line[len("+++ b/") :].rstrip("\n"))
        for line in run.stdout.splitlines()
        if line.startswith("+++ b/")
    }


def compile_failures(corpus: Corpus, paths: Iterable[str]) -> list[str]:
    """``path: error`` for each file that Python cannot compile."""
    failures: list[str] = []
    for rel in sorted(paths):
        path = corpus.root / rel
        try:
            compile(path.read_bytes(), rel, "exec", dont_inherit=True)
        except (SyntaxError, ValueError) as error:
            failures.append(f"{rel}: {type(error).__name__}: {error}")
    return failures


# --------------------------------------------------------------------------------------------
# Reporting


def table(rows: Sequence[Sequence[object]], header: Sequence[str]) -> str:
    """A plain-text table, numbers right-aligned."""
    cells = [[str(c) for c in header], *([str(c) for c in row] for row in rows)]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    numeric = [
        all(row[i].replace(".", "").isdigit() for row in cells[1:]) for i in range(len(header))
    ]

    def fmt(row: Sequence[str]) -> str:
        return "  ".join(
            c.rjust(w) if num else c.ljust(w)
            for c, w, num in zip(row, widths, numeric, strict=True)
        ).rstrip()

    rule = "  ".join("-" * w for w in widths)
    return "\n".join([fmt(cells[0]), rule, *(fmt(row) for row in cells[1:])])


def section(title: str) -> None:
    print(f"\n== {title}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE, help="install folder root")
    parser.add_argument("--keep", action="store_true", help="keep the temporary copy")
    parser.add_argument(
        "--show-findings", type=int, default=40, metavar="N", help="print up to N findings"
    )
    options = parser.parse_args(argv)

    site = site_folder(options.cache)
    install(site)

    root = Path(tempfile.mkdtemp(prefix="jaxfix-real-code-"))
    try:
        return check_corpus(copy_sources(site, root), options.show_findings)
    finally:
        if options.keep:
            print(f"\n(kept the copy in {root})")
        else:
            shutil.rmtree(root, ignore_errors=True)


def check_corpus(corpus: Corpus, show_findings: int) -> int:
    root = corpus.root
    original = corpus.snapshot()
    total = len(corpus.original)

    before = jaxfix("check (before)", ["check"], root)
    dry = jaxfix("apply --diff --unsafe-fixes", ["apply", "--diff", "--unsafe-fixes"], root)
    after_dry = corpus.snapshot()
    first = jaxfix("apply --unsafe-fixes (1st)", ["apply", "--unsafe-fixes"], root)
    after_first = corpus.snapshot()
    remaining = jaxfix("check (after)", ["check"], root)
    second = jaxfix("apply --unsafe-fixes (2nd)", ["apply", "--unsafe-fixes"], root)
    after_second = corpus.snapshot()
    runs = [before, dry, first, remaining, second]

    changed = {rel for rel in corpus.original if after_first[rel] != original[rel]}
    dry_wrote = sorted(rel for rel in corpus.original if after_dry[rel] != original[rel])
    second_changed = sorted(rel for rel in corpus.original if after_second[rel] != after_first[rel])
    found_before = findings(before)
    found_after = findings(remaining)
    with_findings = {path for path, _, _ in found_before}
    untouched_differ = sorted(
        rel
        for rel in corpus.original
        if rel not in with_findings
        and (after_first[rel] != original[rel] or after_second[rel] != original[rel])
    )
    compile_errors = compile_failures(corpus, changed)
    diffed = diff_files(dry)

    # Packages.
    section("packages")
    rows: list[list[object]] = []
    for name, version in PINS.items():
        rels = [rel for rel, pkg in corpus.package.items() if pkg == name]
        lines = sum(corpus.original[rel].count(b"\n") for rel in rels)
        rows.append(
            [
                name,
                version,
                len(rels),
                lines,
                sum(rel in changed for rel in rels),
                sum(corpus.package.get(p) == name for p, _, _ in found_before),
                sum(corpus.package.get(p) == name for p, _, _ in found_after),
            ]
        )
    rows.append(["total", "", *(sum(int(str(r[i])) for r in rows) for i in range(2, 7))])
    header = ["package", "version", "files", "lines", "changed", "findings", "remaining"]
    print(table(rows, header))

    # Findings by code.
    section("findings by code (check before the first pass / after it)")
    codes_before = Counter(code for _, code, _ in found_before)
    codes_after = Counter(code for _, code, _ in found_after)
    codes = sorted(set(codes_before) | set(codes_after))
    print(
        table(
            [[c, codes_before[c], codes_after[c]] for c in codes] or [["-", 0, 0]],
            ["code", "before", "after"],
        )
    )

    # Errors by kind, per run.
    section("errors by kind (stderr `error:` lines)")
    kind_rows: list[list[object]] = []
    for run in runs:
        kinds = Counter(error_kind(line) for line in run.error_lines)
        kind_rows.append([run.label, *(kinds[k] for k in ERROR_KINDS), run.returncode])
    print(table(kind_rows, ["run", *ERROR_KINDS, "exit"]))

    # Passes.
    section("passes")
    print(
        table(
            [[run.label, run.checked_files, f"{run.seconds:.1f}", run.summary] for run in runs],
            ["run", "files", "seconds", "summary"],
        )
    )

    parse_lines = sorted({line for line in first.error_lines if error_kind(line) == "parse"})
    bad_lines = sorted(
        {line for run in runs for line in run.error_lines if error_kind(line) != "parse"}
    )
    crashed = [run.label for run in runs if run.crashed]
    unprocessed = [run.label for run in runs if run.checked_files != total]

    section("results")
    results: list[tuple[str, bool, str]] = [
        (
            "every file processed",
            not unprocessed,
            f"{total} copied"
            + (f"; miscounted by {', '.join(unprocessed)}" if unprocessed else ""),
        ),
        ("no internal errors / left unchanged / other errors", not bad_lines, str(len(bad_lines))),
        ("no crash (exit 0/1/2, no traceback)", not crashed, ", ".join(crashed) or "-"),
        ("parse errors (LibCST; reported, not failed)", True, str(len(parse_lines))),
        ("changed files compile", not compile_errors, f"{len(compile_errors)} failures"),
        ("--diff writes nothing", not dry_wrote, f"{len(dry_wrote)} files written"),
        (
            "--diff names the files the 1st pass changes",
            diffed == changed,
            f"{len(diffed)} diffed, {len(changed)} changed",
        ),
        ("2nd pass changes nothing", not second_changed, f"{len(second_changed)} changed"),
        (
            "files without findings byte-identical",
            not untouched_differ,
            "yes" if not untouched_differ else f"no ({len(untouched_differ)} differ)",
        ),
    ]
    print(
        table(
            [["PASS" if ok else "FAIL", what, detail] for what, ok, detail in results],
            ["", "property", "detail"],
        )
    )

    details: list[tuple[str, Sequence[str]]] = [
        ("parse errors (files LibCST cannot parse)", parse_lines),
        ("internal / left-unchanged / other errors", bad_lines),
        ("compile failures", compile_errors),
        ("written by --diff", dry_wrote),
        ("diffed but not changed", sorted(diffed - changed)),
        ("changed but not diffed", sorted(changed - diffed)),
        ("changed by the 2nd pass", second_changed),
        ("changed without findings", untouched_differ),
        (
            "runs that crashed",
            [f"{r.label}: exit {r.returncode}\n{r.stderr[-2000:]}" for r in runs if r.crashed],
        ),
    ]
    for title, entries in details:
        if entries:
            section(title)
            print("\n".join(entries))
    if found_before and show_findings:
        section(f"findings before the first pass ({len(found_before)}, showing {show_findings})")
        print("\n".join(line for _, _, line in found_before[:show_findings]))
    return 0 if all(ok for _, ok, _ in results) else 1


if __name__ == "__main__":
    sys.exit(main())
