"""The hooks of `.pre-commit-hooks.yaml`, run by the real pre-commit in a temporary git repository.

pre-commit installs a hook repository at a git revision, so the tests commit a snapshot of this
checkout's working tree (uncommitted and untracked files included, as `pre-commit try-repo` does
for uncommitted ones) and point a `.pre-commit-config.yaml` at it. Building the hooks' virtualenv
(pip installs jaxfix and its dependencies) is the slow part, so every test shares one
PRE_COMMIT_HOME, across xdist workers too: pre-commit's own store lock makes the build happen once.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from jaxfix.cli import main
from tests.documents import fenced_everywhere
from tests.programs import CACHED, CLEAN

ROOT = Path(__file__).resolve().parent.parent
TIMEOUT = 300  # the first run builds the hooks' virtualenv

pytestmark = pytest.mark.skipif(
    shutil.which("git") is None, reason="pre-commit hooks live in git repositories: git is missing"
)


@dataclass(frozen=True)
class HookRepo:
    """A committed snapshot of the checkout, and the environment that keeps every cache, git
    setting and identity of the run inside the test's temporary folders."""

    path: Path
    rev: str
    isolation: dict[str, str]

    def env(self) -> dict[str, str]:
        return {**inherited_env(), **self.isolation}


def inherited_env() -> dict[str, str]:
    """The current environment (with the JAXFIX_CACHE_DIR of the running test), minus any GIT_*
    variable of an enclosing git hook."""
    return {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}


def run(command: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command,
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=TIMEOUT,
    )


def git(repo: Path, env: dict[str, str], *args: str) -> str:
    result = run(["git", *args], repo, env)
    assert result.returncode == 0, result.stdout
    return result.stdout


def shared_tmp(factory: pytest.TempPathFactory) -> Path:
    """The temporary folder of the whole test session (shared by its xdist workers)."""
    base = factory.getbasetemp()
    return base.parent if "PYTEST_XDIST_WORKER" in os.environ else base


def snapshot(folder: Path, env: dict[str, str]) -> None:
    """Commit the working tree's files (tracked or not, unless ignored) as one git repository."""
    listed = git(
        ROOT, inherited_env(), "ls-files", "-z", "--cached", "--others", "--exclude-standard"
    )
    for name in filter(None, listed.split("\0")):
        source = ROOT / name
        if source.exists() or source.is_symlink():  # not deleted in the working tree
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, folder / name, follow_symlinks=False)
    git(folder, env, "init", "-q")
    git(folder, env, "add", "-A")
    git(folder, env, "commit", "-q", "-m", "snapshot")


@pytest.fixture(scope="module")
def hook_repo(tmp_path_factory: pytest.TempPathFactory) -> HookRepo:
    shared = shared_tmp(tmp_path_factory) / "pre-commit"
    shared.mkdir(exist_ok=True)
    (shared / "gitconfig").touch()
    isolation = {
        "PRE_COMMIT_HOME": str(shared / "home"),
        "PIP_CACHE_DIR": str(shared / "pip"),
        "VIRTUALENV_OVERRIDE_APP_DATA": str(shared / "virtualenv"),
        # A fresh app-data folder makes virtualenv start a background `pip download` of newer
        # seed wheels (6 s of CPU taken from the other tests): the embedded ones do.
        "VIRTUALENV_NO_PERIODIC_UPDATE": "1",
        # Byte-compiling every installed module is a fifth of the hooks' install; the hook
        # compiles the few it imports on its first run.
        "PIP_COMPILE": "0",  # pip reads PIP_NO_COMPILE=1 as `--compile`
        # An isolated build installs setuptools into a throwaway environment for each build (a
        # third of the hooks' install): build with the setuptools that virtualenv seeds instead.
        # CI's `pip install -e .` still builds in isolation, against pyproject's requirement.
        "PIP_NO_BUILD_ISOLATION": "0",  # pip reads it inverted, as for PIP_NO_COMPILE
        "VIRTUALENV_SETUPTOOLS": "bundle",
        "GIT_CONFIG_GLOBAL": str(shared / "gitconfig"),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "jaxfix tests",
        "GIT_AUTHOR_EMAIL": "tests@jaxfix.invalid",
        "GIT_COMMITTER_NAME": "jaxfix tests",
        "GIT_COMMITTER_EMAIL": "tests@jaxfix.invalid",
    }
    env = {**inherited_env(), **isolation}
    own = tmp_path_factory.mktemp("snapshot")
    snapshot(own, env)
    path = shared / "snapshot"
    try:  # the first worker's snapshot wins: the same repository means the same virtualenv
        own.rename(path)
    except OSError:
        assert (path / ".git").is_dir()
    return HookRepo(path, git(path, env, "rev-parse", "HEAD").strip(), isolation)


def project(folder: Path, hook_repo: HookRepo, *hook_ids: str) -> Path:
    """A git repository whose committed `.pre-commit-config.yaml` runs HOOK_IDS."""
    hooks = "".join(f"      - id: {hook_id}\n" for hook_id in hook_ids)
    config = f"repos:\n  - repo: {hook_repo.path}\n    rev: {hook_repo.rev}\n    hooks:\n{hooks}"
    (folder / ".pre-commit-config.yaml").write_text(config)
    env = hook_repo.env()
    git(folder, env, "init", "-q")
    git(folder, env, "add", ".pre-commit-config.yaml")
    git(folder, env, "commit", "-q", "-m", "pre-commit")
    return folder


def pre_commit(folder: Path, hook_repo: HookRepo, *args: str) -> subprocess.CompletedProcess[str]:
    return run([sys.executable, "-m", "pre_commit", *args], folder, hook_repo.env())


def applied_in_process(text: str, folder: Path) -> str:
    """What `jaxfix apply` makes of TEXT, run through click on a file of its own."""
    path = folder / "bad.py"
    path.write_text(text)
    result = CliRunner().invoke(main, ["apply", str(path)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return path.read_text()


def test_check_hook_fails_on_a_finding_and_names_file_and_code(
    tmp_path: Path, hook_repo: HookRepo
) -> None:
    repo = project(tmp_path, hook_repo, "jaxfix-check")
    (repo / "bad.py").write_text(CACHED)
    result = pre_commit(repo, hook_repo, "run", "jaxfix-check", "--files", "bad.py")
    assert result.returncode == 1, result.stdout
    finding = r"^bad\.py:6:1: JF102 `functools\.lru_cache` caches `f`"
    assert re.search(finding, result.stdout, re.M), result.stdout
    assert (repo / "bad.py").read_text() == CACHED


def test_check_hook_reports_a_staged_helper_because_of_its_unstaged_jitted_caller(
    tmp_path: Path, hook_repo: HookRepo
) -> None:
    """pre-commit passes the staged files only; the hook reads the project's other modules
    for context (`--project-context`), so the helper is traced from `train.py`'s jitted step.
    """
    repo = project(tmp_path, hook_repo, "jaxfix-check")
    (repo / "pkg").mkdir()
    (repo / "pkg" / "__init__.py").write_text("")
    (repo / "pkg" / "io.py").write_text(
        "import pickle\n\n\ndef save_blob(log, value):\n    log.append(pickle.dumps(value))\n"
    )
    (repo / "pkg" / "train.py").write_text(
        "import jax\nfrom pkg.io import save_blob\n\nLOG = []\n\n\n@jax.jit\n"
        "def step(x):\n    save_blob(LOG, x)\n    return x\n"
    )
    git(repo, hook_repo.env(), "add", "pkg/__init__.py", "pkg/io.py")
    result = pre_commit(repo, hook_repo, "run", "jaxfix-check")  # the staged files
    assert result.returncode == 1, result.stdout
    finding = r"^pkg/io\.py:5:16: JF101 .*\(called from traced `pkg\.train\.step`\)"
    assert re.search(finding, result.stdout, re.M), result.stdout
    assert "pkg/train.py" not in result.stdout
    assert "Checked 2 files: 1 finding" in result.stdout


def test_check_hook_passes_on_a_clean_file(tmp_path: Path, hook_repo: HookRepo) -> None:
    repo = project(tmp_path, hook_repo, "jaxfix-check")
    (repo / "clean.py").write_text(CLEAN)
    result = pre_commit(repo, hook_repo, "run", "jaxfix-check", "--files", "clean.py")
    assert result.returncode == 0, result.stdout
    assert re.search(r"^jaxfix check\.+Passed$", result.stdout, re.M), result.stdout


def test_check_hook_runs_on_stubs_and_skips_other_files(
    tmp_path: Path, hook_repo: HookRepo
) -> None:
    repo = project(tmp_path, hook_repo, "jaxfix-check")
    (repo / "bad.pyi").write_text(CACHED)
    (repo / "notes.md").write_text(CACHED)
    result = pre_commit(repo, hook_repo, "run", "jaxfix-check", "--files", "bad.pyi", "notes.md")
    assert result.returncode == 1, result.stdout
    assert re.search(r"^bad\.pyi:6:1: JF102 ", result.stdout, re.M), result.stdout
    assert "notes.md" not in result.stdout


def test_the_hooks_install_jaxfix_with_its_data_files(tmp_path: Path, hook_repo: HookRepo) -> None:
    """The hooks' environment holds jaxfix as pip installs it, not as a checkout: with every
    fixture (`jaxfix verify` runs them), the JSON schema and the model tables."""
    repo = project(tmp_path, hook_repo, "jaxfix-check")
    assert pre_commit(repo, hook_repo, "install-hooks").returncode == 0
    home = Path(hook_repo.isolation["PRE_COMMIT_HOME"])
    [installed] = home.glob("repo*/py_env-*/lib/python*/site-packages/jaxfix")
    shipped = {
        ("fixtures", *p.relative_to(ROOT / "tests" / "fixtures").parts)
        for p in (ROOT / "tests" / "fixtures").glob("*/*/*")
        if p.suffix in (".py", ".toml")
    }
    shipped |= {p.relative_to(ROOT / "jaxfix").parts for p in ROOT.glob("jaxfix/schemas/*.json")}
    shipped |= {p.relative_to(ROOT / "jaxfix").parts for p in ROOT.glob("jaxfix/models/*.tsv")}
    found = {
        p.relative_to(installed).parts
        for p in installed.rglob("*")
        if p.suffix in (".py", ".toml", ".json", ".tsv") and p.parts[-2] != "codemods"
    }
    assert len(shipped) > 400 and shipped <= found, sorted(shipped - found)[:5]


def test_apply_hook_rewrites_stops_the_commit_and_the_next_commit_passes(
    tmp_path: Path, hook_repo: HookRepo
) -> None:
    (tmp_path / "repo").mkdir()
    (tmp_path / "copy").mkdir()
    repo = project(tmp_path / "repo", hook_repo, "jaxfix-apply")
    fixed = applied_in_process(CACHED, tmp_path / "copy")
    assert fixed != CACHED
    env = hook_repo.env()
    assert pre_commit(repo, hook_repo, "install").returncode == 0
    (repo / "bad.py").write_text(CACHED)
    git(repo, env, "add", "bad.py")
    before = git(repo, env, "rev-parse", "HEAD")

    stopped = run(["git", "commit", "-q", "-m", "add bad.py"], repo, env)
    assert stopped.returncode == 1, stopped.stdout
    assert "- hook id: jaxfix-apply\n- exit code: 1\n- files were modified by this hook" in (
        stopped.stdout
    )
    assert (repo / "bad.py").read_text() == fixed
    assert git(repo, env, "rev-parse", "HEAD") == before

    git(repo, env, "add", "bad.py")
    committed = run(["git", "commit", "-q", "-m", "add bad.py"], repo, env)
    assert committed.returncode == 0, committed.stdout
    assert re.search(r"^jaxfix apply\.+Passed$", committed.stdout, re.M), committed.stdout
    assert git(repo, env, "show", "HEAD:bad.py") == fixed


def readme_yaml(name: str) -> str:
    """The ```yaml block of README.md and docs/ that starts with the comment `# NAME`: the same
    wherever it is shown."""
    blocks = {body for _, body in fenced_everywhere("yaml") if body.startswith(f"# {name}\n")}
    assert len(blocks) == 1, f"{len(blocks)} different `{name}` snippets in README.md and docs/"
    return blocks.pop()


def test_the_readme_snippet_works_once_autoupdate_pins_a_commit(
    tmp_path: Path, hook_repo: HookRepo
) -> None:
    """The README's `.pre-commit-config.yaml`, pointed at a snapshot without tags: valid as
    written (`rev: HEAD`, with pre-commit's warning), pinned to the commit by `autoupdate`, and
    its hooks run at that commit."""
    snippet = readme_yaml(".pre-commit-config.yaml")
    config = re.sub(r"(?m)^(\s+- repo: )\S+", rf"\g<1>{hook_repo.path}", snippet, count=1)
    assert config != snippet and "rev: HEAD" in config
    (tmp_path / ".pre-commit-config.yaml").write_text(config)
    env = hook_repo.env()
    git(tmp_path, env, "init", "-q")
    validated = pre_commit(tmp_path, hook_repo, "validate-config", ".pre-commit-config.yaml")
    assert validated.returncode == 0 and "mutable reference" in validated.stdout, validated.stdout

    updated = pre_commit(tmp_path, hook_repo, "autoupdate")
    assert updated.returncode == 0, updated.stdout
    pinned = (tmp_path / ".pre-commit-config.yaml").read_text()
    assert pinned == config.replace("rev: HEAD", f"rev: {hook_repo.rev}")

    git(tmp_path, env, "add", ".pre-commit-config.yaml")
    git(tmp_path, env, "commit", "-q", "-m", "pre-commit")
    (tmp_path / "bad.py").write_text(CACHED)
    result = pre_commit(tmp_path, hook_repo, "run", "--files", "bad.py")
    assert result.returncode == 1, result.stdout
    assert "- hook id: jaxfix-apply\n- exit code: 1\n" in result.stdout
    assert "fixed 1 finding in 1 file, 0 remaining." in result.stdout
    assert re.search(r"^jaxfix check\.+Passed$", result.stdout, re.M), result.stdout
    assert "lru_cache" not in (tmp_path / "bad.py").read_text()


def test_the_readme_workflow_installs_jaxfix_from_its_git_repository(
    tmp_path: Path, hook_repo: HookRepo
) -> None:
    """The install line of the README's GitHub Actions workflow, with a `file://` clone of the
    snapshot (its branch `main`) in place of GitHub: pip resolves it to that commit."""
    workflow = yaml.safe_load(readme_yaml(".github/workflows/jaxfix.yml"))
    runs = [step["run"] for step in workflow["jobs"]["jaxfix"]["steps"] if "run" in step]
    assert runs == [
        "pip install git+https://github.com/jaxfix/jaxfix@main",
        "jaxfix check --output-format github .",
    ]
    env = hook_repo.env()
    # A user's pip builds in isolation (and this virtualenv's setuptools may be too old).
    del env["PIP_NO_BUILD_ISOLATION"]
    clone = tmp_path / "jaxfix"
    git(tmp_path, env, "clone", "-q", str(hook_repo.path), str(clone))
    git(clone, env, "checkout", "-q", "-B", "main")
    requirement = runs[0].split()[-1].replace("https://github.com/jaxfix/jaxfix", clone.as_uri())
    report = tmp_path / "report.json"
    pip = [sys.executable, "-m", "pip", "install", "--dry-run", "--no-deps", "--report"]
    result = run([*pip, str(report), requirement], tmp_path, env)
    assert result.returncode == 0, result.stdout
    installed = [
        (item["metadata"]["name"], item["download_info"]["vcs_info"])
        for item in json.loads(report.read_text())["install"]
    ]
    revision = {"vcs": "git", "requested_revision": "main", "commit_id": hook_repo.rev}
    assert installed == [("jaxfix", revision)]
