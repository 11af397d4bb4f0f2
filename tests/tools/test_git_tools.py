"""git_status and git_diff: read-only, bounded, confined, and deaf to a repository's config."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from mini_harness import MemorySink, ToolRuntime
from mini_harness.errors import ToolHandlerError
from mini_harness.runtime import ToolRegistry
from mini_harness.tools import register_coding_tools
from mini_harness.tools.git_tools import Git
from mini_harness.tools.workspace import Workspace

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")

IDENTITY = ["-c", "user.name=Test", "-c", "user.email=test@example.com"]


def git(root: Path, *args: str, check: bool = True) -> str:
    env = {"PATH": os.environ["PATH"], "HOME": str(root), "GIT_CONFIG_NOSYSTEM": "1"}
    return subprocess.run(
        ["git", *IDENTITY, *args], cwd=root, env=env, check=check, capture_output=True, text=True
    ).stdout


def make_repo(root: Path) -> Path:
    """A repository with two committed files, one of them then changed, one staged, one new."""
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    (root / "a.txt").write_text("one\ntwo\n")
    (root / "b.txt").write_text("bee\n")
    git(root, "add", "a.txt", "b.txt")
    git(root, "commit", "-qm", "start")
    (root / "a.txt").write_text("one\nTWO\n")
    (root / "b.txt").write_text("bee\nstaged\n")
    git(root, "add", "b.txt")
    (root / "new.txt").write_text("untracked\n")
    return root


@pytest.fixture(name="repo")
def _repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "repo")


def runtime_for(root: Path) -> ToolRuntime:
    registry = ToolRegistry()
    register_coding_tools(registry, root, sandbox=False)
    return ToolRuntime(registry, MemorySink())


class TestGitStatus:
    def test_lists_changed_staged_and_untracked_files(self, repo: Path) -> None:
        """Each changed file appears with git's two-letter code, and the branch is named."""
        out = runtime_for(repo).dispatch("git_status", {}).output
        assert out["branch"].startswith("main")
        assert {e["path"]: e["status"] for e in out["entries"]} == {
            "a.txt": " M",
            "b.txt": "M ",
            "new.txt": "??",
        }
        assert out["clean"] is False
        assert out["truncated"] is False

    def test_path_narrows_the_status(self, repo: Path) -> None:
        """With a path only that file's entry is listed."""
        out = runtime_for(repo).dispatch("git_status", {"path": "a.txt"}).output
        assert [e["path"] for e in out["entries"]] == ["a.txt"]

    def test_outside_a_repository_is_a_clear_error(self, tmp_path: Path) -> None:
        """A workspace that is no repository fails with a message saying so."""
        plain = tmp_path / "plain"
        plain.mkdir()
        with pytest.raises(ToolHandlerError, match="not a git repository"):
            runtime_for(plain).dispatch("git_status", {})

    def test_never_uses_a_repository_above_the_workspace(self, repo: Path) -> None:
        """A workspace inside a repository's subdirectory does not see the outer repository."""
        inner = repo / "sub"
        inner.mkdir()
        with pytest.raises(ToolHandlerError, match="not a git repository"):
            runtime_for(inner).dispatch("git_status", {})

    def test_timeout_is_an_error(self, repo: Path) -> None:
        """git that does not answer in time fails the call and says after how long."""
        git = Git(Workspace(repo), timeout=0.000001)
        with pytest.raises(Exception, match="did not finish within"):
            git.status({})


class TestGitDiff:
    def test_shows_unstaged_changes(self, repo: Path) -> None:
        """The diff of the working tree is unified diff text of the changed file."""
        out = runtime_for(repo).dispatch("git_diff", {}).output
        assert "-two\n+TWO\n" in out["diff"]
        assert "b.txt" not in out["diff"]
        assert out["empty"] is False

    def test_staged_shows_the_index(self, repo: Path) -> None:
        """staged: true shows what is staged, not the working tree."""
        out = runtime_for(repo).dispatch("git_diff", {"staged": True}).output
        assert "+staged\n" in out["diff"]
        assert "a.txt" not in out["diff"]

    def test_path_of_a_deleted_file(self, repo: Path) -> None:
        """A path that no longer exists still shows its deletion."""
        (repo / "a.txt").unlink()
        out = runtime_for(repo).dispatch("git_diff", {"path": "a.txt"}).output
        assert "deleted file mode" in out["diff"]

    def test_no_changes_is_empty(self, repo: Path) -> None:
        """An unchanged file's diff is empty and says so."""
        out = runtime_for(repo).dispatch("git_diff", {"path": "b.txt"}).output
        assert out == {"diff": "", "empty": True, "truncated": False}

    @pytest.mark.parametrize("path", ["../outside.txt", "/etc/passwd", "a\0b"])
    def test_paths_outside_are_refused(self, repo: Path, path: str) -> None:
        """Paths leaving the workspace are refused before git runs."""
        with pytest.raises(ToolHandlerError, match=r"outside the workspace|absolute|NUL"):
            runtime_for(repo).dispatch("git_diff", {"path": path})

    def test_large_output_is_bounded(self, repo: Path) -> None:
        """A diff larger than the limit keeps its head and tail and says it was truncated."""
        (repo / "a.txt").write_text("".join(f"line {i}\n" for i in range(5000)))
        out = Git(Workspace(repo), max_output=2000).diff({})
        assert out["truncated"] is True
        assert "bytes left out" in out["diff"]
        assert len(out["diff"]) < 2200
        assert out["diff"].startswith("diff --git")


def _marker_script(bin_dir: Path, marks: Path, name: str) -> str:
    script = bin_dir / name
    script.write_text(f"#!/bin/sh\ntouch '{marks}/{name}'\ncat\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return str(script)


def plant_hostile_config(repo: Path, tmp_path: Path) -> Path:
    """Every configuration that can run a command, each writing its own marker; returns marks."""
    marks = tmp_path / "marks"
    marks.mkdir()
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    settings = {
        "core.pager": "pager",
        "pager.diff": "pager_diff",
        "pager.status": "pager_status",
        "diff.external": "external_diff",
        "core.fsmonitor": "fsmonitor",
        "diff.evil.textconv": "textconv",
        "diff.evil.command": "diff_driver",
        "filter.evil.clean": "filter_clean",
        "filter.evil.smudge": "filter_smudge",
        "filter.evil.process": "filter_process",
        "core.editor": "editor",
        "core.sshCommand": "ssh",
    }
    for key, name in settings.items():
        git(repo, "config", key, _marker_script(bin_dir, marks, name))
    git(repo, "config", "filter.evil.required", "true")
    for hook in ("post-index-change", "pre-commit", "post-checkout", "reference-transaction"):
        _marker_script(hooks, marks, hook)
        shutil.copy(hooks / hook, repo / ".git" / "hooks" / hook)
    git(repo, "config", "core.hooksPath", str(hooks))
    (repo / ".gitattributes").write_text("* diff=evil filter=evil\n")
    # Touch the files so git must read their contents again (stat data no longer matches).
    for name in ("a.txt", "b.txt"):
        os.utime(repo / name, (1, 1))
    return marks


class TestHostileRepository:
    def test_core_worktree_cannot_point_outside(self, repo: Path, tmp_path: Path) -> None:
        """A repository whose core.worktree names another directory still shows the workspace."""
        elsewhere = tmp_path / "elsewhere"
        elsewhere.mkdir()
        (elsewhere / "a.txt").write_text("secret from outside\n")
        git(repo, "config", "core.worktree", str(elsewhere))
        diff = runtime_for(repo).dispatch("git_diff", {}).output["diff"]
        assert "secret from outside" not in diff
        assert "+TWO" in diff
        assert "secret from outside" in git(repo, "diff")  # plain git would show it

    def test_no_configured_command_ever_runs(self, repo: Path, tmp_path: Path) -> None:
        """Pager, external diff, fsmonitor, textconv, diff drivers, filters, hooks: none run."""
        marks = plant_hostile_config(repo, tmp_path)
        runtime = runtime_for(repo)
        runtime.dispatch("git_status", {})
        diff = runtime.dispatch("git_diff", {}).output
        runtime.dispatch("git_diff", {"staged": True})
        runtime.dispatch("git_diff", {"path": "a.txt"})
        assert "-two\n+TWO\n" in diff["diff"]  # the real content, not a textconv'd one
        assert sorted(os.listdir(marks)) == []

    def test_the_planted_config_does_run_commands_for_plain_git(
        self, repo: Path, tmp_path: Path
    ) -> None:
        """The same repository makes plain `git diff` run planted commands (the test bites)."""
        marks = plant_hostile_config(repo, tmp_path)
        git(repo, "diff", check=False)  # the planted filter is no real filter: git may fail
        git(repo, "diff", "--no-ext-diff", check=False)
        assert {"fsmonitor", "filter_process"} <= set(os.listdir(marks))
