"""git_status and git_diff: read-only, bounded, confined, and deaf to a repository's config."""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import subprocess
import threading
import time
from pathlib import Path

import pytest

from mini_harness import MemorySink, ToolRuntime
from mini_harness.errors import GitError, ToolHandlerError
from mini_harness.runtime import ToolRegistry
from mini_harness.tools import register_coding_tools
from mini_harness.tools.git_dir import repository_head
from mini_harness.tools.git_tools import Git
from mini_harness.tools.sandbox import bubblewrap
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


def runtime_for(root: Path, *, sandbox: bool = False) -> ToolRuntime:
    registry = ToolRegistry()
    register_coding_tools(registry, root, sandbox=sandbox)
    return ToolRuntime(registry, MemorySink())


MODES = [
    pytest.param(False, id="unsandboxed"),
    pytest.param(
        True,
        id="bubblewrap",
        marks=pytest.mark.skipif(bubblewrap() is None, reason="bubblewrap cannot run here"),
    ),
]


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


class TestStatusPaths:
    def test_a_name_with_a_space_and_non_ascii_is_given_as_is(self, repo: Path) -> None:
        """Paths are the file names, not git's C-quoted text, and feed back into git_diff."""
        (repo / "d d").mkdir()
        (repo / "d d" / "é.txt").write_text("one\n")
        git(repo, "add", "d d/é.txt")
        git(repo, "commit", "-qm", "named")
        (repo / "d d" / "é.txt").write_text("two\n")
        runtime = runtime_for(repo)
        entries = runtime.dispatch("git_status", {}).output["entries"]
        assert {"status": " M", "path": "d d/é.txt"} in entries
        diff = runtime.dispatch("git_diff", {"path": "d d/é.txt"}).output["diff"]
        assert "-one\n+two\n" in diff

    def test_a_rename_names_both_paths(self, repo: Path) -> None:
        """A staged rename is one entry with the new path and origPath, the old one."""
        (repo / "c.txt").write_text("a file long enough to be found again\n")
        git(repo, "add", "c.txt")
        git(repo, "commit", "-qm", "c")
        git(repo, "mv", "c.txt", "renamed c.txt")
        entries = runtime_for(repo).dispatch("git_status", {}).output["entries"]
        assert {"status": "R ", "path": "renamed c.txt", "origPath": "c.txt"} in entries
        assert not any("->" in entry["path"] for entry in entries)

    def test_a_cut_listing_holds_only_entries_git_printed(self, repo: Path) -> None:
        """Over the output limit, status lists whole entries only (from the start) and says
        it was truncated."""
        names = {f"untracked-number-{i:04}.txt" for i in range(600)}
        for name in names:
            (repo / name).write_text("x\n")
        out = Git(Workspace(repo), max_output=4000).status({})
        assert out["truncated"] is True
        paths = [entry["path"] for entry in out["entries"]]
        assert paths
        assert set(paths) <= names | {"a.txt", "b.txt", "new.txt"}
        assert all(entry["status"] in (" M", "M ", "??") for entry in out["entries"])

    def test_names_that_are_not_utf8_are_counted(self, repo: Path) -> None:
        """An untracked file whose name is not UTF-8 is left out and counted, as the file
        tools do."""
        try:
            with open(os.fsencode(repo) + b"/caf\xe9.txt", "wb") as latin1:
                latin1.write(b"x\n")
        except OSError as exc:
            pytest.skip(f"this filesystem refuses names that are not UTF-8: {exc}")
        out = runtime_for(repo).dispatch("git_status", {}).output
        assert out["skippedUndecodable"] == 1
        assert "new.txt" in [entry["path"] for entry in out["entries"]]


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

    def test_path_in_a_deleted_directory(self, repo: Path) -> None:
        """A file whose whole directory was deleted still shows its deletion, by its path
        or by the directory's."""
        (repo / "d").mkdir()
        (repo / "d" / "x.txt").write_text("gone soon\n")
        git(repo, "add", "d/x.txt")
        git(repo, "commit", "-qm", "d")
        shutil.rmtree(repo / "d")
        runtime = runtime_for(repo)
        for path in ("d/x.txt", "d"):
            diff = runtime.dispatch("git_diff", {"path": path}).output["diff"]
            assert "deleted file mode" in diff
            assert "-gone soon\n" in diff

    def test_bytes_that_are_not_utf8_are_said(self, repo: Path) -> None:
        """A diff holding bytes that are not UTF-8 says so (they are shown as U+FFFD)."""
        runtime = runtime_for(repo)
        assert runtime.dispatch("git_diff", {}).output["invalidUtf8"] is False
        (repo / "a.txt").write_bytes(b"one\ncaf\xe9\n")
        out = runtime.dispatch("git_diff", {}).output
        assert out["invalidUtf8"] is True
        assert "+caf\ufffd\n" in out["diff"]

    def test_no_changes_is_empty(self, repo: Path) -> None:
        """An unchanged file's diff is empty and says so."""
        out = runtime_for(repo).dispatch("git_diff", {"path": "b.txt"}).output
        assert out == {"diff": "", "empty": True, "truncated": False, "invalidUtf8": False}

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


def plant_filter_drivers(repo: Path, marker: Path) -> None:
    """~400 filter drivers in .git/config, the one in the middle and one named `x=y`
    writing `marker` (outside the workspace) when git runs them."""
    drivers = []
    for i in range(400):
        clean = f"touch {marker}; cat" if i == 200 else "cat"
        drivers.append(f'[filter "f{i}"]\n\tclean = {clean}\n\tsmudge = cat\n\trequired\n')
        drivers.append(f"\tdescription = {'padding ' * 12}\n")
    drivers.append(f'[filter "x=y"]\n\tclean = touch {marker}; cat\n\tprocess = touch {marker}\n')
    with (repo / ".git" / "config").open("a") as config:
        config.write("".join(drivers))
    (repo / ".gitattributes").write_text("a.txt filter=f200\nb.txt filter=x=y\n")
    for name in ("a.txt", "b.txt"):
        os.utime(repo / name, (1, 1))


class TestRepositoryConfigurationIsNeverRead:
    @pytest.mark.parametrize("sandbox", MODES)
    def test_many_filter_drivers_never_run(self, repo: Path, tmp_path: Path, sandbox: bool) -> None:
        """However many filter drivers the configuration holds, and however they are
        named, git_status and git_diff run none of them."""
        marker = tmp_path / "marker"
        plant_filter_drivers(repo, marker)
        runtime = runtime_for(repo, sandbox=sandbox)
        status = runtime.dispatch("git_status", {}).output
        runtime.dispatch("git_diff", {})
        runtime.dispatch("git_diff", {"staged": True})
        assert not marker.exists()
        assert {e["path"] for e in status["entries"]} >= {"a.txt", "b.txt"}

    def test_the_planted_drivers_do_run_for_plain_git(self, repo: Path, tmp_path: Path) -> None:
        """The same repository makes plain `git status` run a planted filter (the test
        above bites)."""
        marker = tmp_path / "marker"
        plant_filter_drivers(repo, marker)
        git(repo, "status", check=False)
        assert marker.exists()

    @pytest.mark.parametrize("sandbox", MODES)
    def test_a_submodule_configuration_is_never_read(
        self, repo: Path, tmp_path: Path, sandbox: bool
    ) -> None:
        """A submodule's own fsmonitor hook does not run: git never looks inside it."""
        inner = make_repo(tmp_path / "inner")
        git(repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(inner), "sub")
        git(repo, "commit", "-qm", "submodule")
        marker = tmp_path / "marker"
        script = tmp_path / "fsmonitor"
        script.write_text(f"#!/bin/sh\ntouch {marker}\n")
        script.chmod(0o755)
        git(repo / "sub", "config", "core.fsmonitor", str(script))
        (repo / "sub" / "a.txt").write_text("changed in the submodule\n")
        runtime = runtime_for(repo, sandbox=sandbox)
        runtime.dispatch("git_status", {})
        runtime.dispatch("git_diff", {})
        assert not marker.exists()

    @pytest.mark.parametrize("sandbox", MODES)
    def test_settings_that_describe_the_repository_are_kept(
        self, tmp_path: Path, sandbox: bool
    ) -> None:
        """A SHA-256 repository is read, and core.fileMode=false still hides mode changes."""
        root = tmp_path / "sha256"
        root.mkdir()
        git(root, "init", "-q", "--object-format=sha256", "-b", "main")
        (root / "run.sh").write_text("echo\n")
        git(root, "add", "run.sh")
        git(root, "commit", "-qm", "start")
        git(root, "config", "core.fileMode", "false")
        (root / "run.sh").chmod(0o755)
        out = runtime_for(root, sandbox=sandbox).dispatch("git_status", {}).output
        assert out["clean"] is True
        assert out["branch"] == "main"

    @pytest.mark.parametrize("sandbox", MODES)
    def test_diff_prefixes_are_gits_own(self, repo: Path, sandbox: bool) -> None:
        """diff.mnemonicPrefix and diff.noprefix in the repository do not change the
        a/ and b/ prefixes apply_patch reads."""
        git(repo, "config", "diff.mnemonicPrefix", "true")
        git(repo, "config", "diff.noprefix", "true")
        diff = runtime_for(repo, sandbox=sandbox).dispatch("git_diff", {}).output["diff"]
        assert diff.startswith("diff --git a/a.txt b/a.txt\n")
        assert "--- a/a.txt\n+++ b/a.txt\n" in diff


class TestRepositoryOutsideTheWorkspace:
    @pytest.fixture(name="other")
    def _other(self, tmp_path: Path) -> Path:
        """Another repository, outside the workspace, with a committed secret."""
        other = tmp_path / "other"
        other.mkdir()
        git(other, "init", "-q", "-b", "main")
        (other / "secret.txt").write_text("other repository's secret\n")
        git(other, "add", "secret.txt")
        git(other, "commit", "-qm", "secret")
        return other

    @pytest.mark.parametrize("kind", ["gitdir-file", "symlink"])
    def test_a_dot_git_leading_outside_is_refused(
        self, tmp_path: Path, other: Path, kind: str
    ) -> None:
        """A `.git` file (`gitdir: ...`) or link to another repository is refused, and
        nothing of that repository is shown."""
        ws = tmp_path / "ws"
        ws.mkdir()
        if kind == "symlink":
            (ws / ".git").symlink_to(other / ".git")
        else:
            (ws / ".git").write_text(f"gitdir: {other / '.git'}\n")
        for tool, tool_input in (
            ("git_status", {}),
            ("git_diff", {}),
            ("git_diff", {"staged": True}),
        ):
            with pytest.raises(ToolHandlerError, match="leads outside the workspace") as raised:
                runtime_for(ws).dispatch(tool, tool_input)
            assert "secret" not in str(raised.value)

    def test_a_gitdir_file_inside_the_workspace_works(self, tmp_path: Path) -> None:
        """A `.git` file naming a git directory inside the workspace is followed."""
        ws = make_repo(tmp_path / "ws")
        (ws / ".git").rename(ws / ".real-git")
        (ws / ".git").write_text("gitdir: .real-git\n")
        out = runtime_for(ws).dispatch("git_diff", {}).output
        assert "+TWO" in out["diff"]

    def test_objects_leading_outside_are_refused(self, repo: Path, other: Path) -> None:
        """An entry of the git directory linked outside, or an alternate object directory
        outside, is refused."""
        (repo / ".git" / "objects" / "info").mkdir(exist_ok=True)
        (repo / ".git" / "objects" / "info" / "alternates").write_text(f"{other}/.git/objects\n")
        with pytest.raises(ToolHandlerError, match="alternate object directory leads outside"):
            runtime_for(repo).dispatch("git_diff", {"staged": True})
        (repo / ".git" / "objects" / "info" / "alternates").unlink()
        shutil.move(repo / ".git" / "refs", repo / "refs-moved")
        (repo / ".git" / "refs").symlink_to(other / ".git" / "refs")
        with pytest.raises(ToolHandlerError, match='"refs" entry leads outside'):
            runtime_for(repo).dispatch("git_status", {})


class TestFilesThatWouldBlock:
    @pytest.mark.parametrize("name", ["commondir", "config"])
    def test_a_fifo_in_the_git_directory_is_refused(self, repo: Path, name: str) -> None:
        """A FIFO where git's pointer or configuration file would be is refused at once,
        instead of keeping the tool waiting on it."""
        fifo = repo / ".git" / name
        fifo.unlink(missing_ok=True)
        os.mkfifo(fifo)
        outcome: list[BaseException | None] = []

        def status() -> None:
            try:
                runtime_for(repo).dispatch("git_status", {})
            except BaseException as exc:  # handed to the test's thread
                outcome.append(exc)
            else:
                outcome.append(None)

        worker = threading.Thread(target=status, daemon=True)
        started = time.monotonic()
        worker.start()
        worker.join(5)
        if worker.is_alive():  # let the waiting reader go, then fail
            with contextlib.suppress(OSError):
                os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
            worker.join(30)
        assert time.monotonic() - started < 5
        assert isinstance(outcome[0], ToolHandlerError)
        assert f'".git/{name}" is a FIFO (named pipe), not a regular file' in str(outcome[0])

    def test_an_oversized_pointer_file_is_refused(self, repo: Path) -> None:
        """A `commondir` larger than a path can be is refused, not read."""
        (repo / ".git" / "commondir").write_text("x" * 10_000)
        with pytest.raises(ToolHandlerError, match="is too large"):
            runtime_for(repo).dispatch("git_status", {})

    def test_a_pointer_linked_outside_is_refused(self, repo: Path, tmp_path: Path) -> None:
        """A `commondir` that is a link to a file outside the workspace is not read."""
        (tmp_path / "elsewhere").write_text(".\n")
        (repo / ".git" / "commondir").symlink_to(tmp_path / "elsewhere")
        with pytest.raises(ToolHandlerError, match="leads outside the workspace"):
            runtime_for(repo).dispatch("git_status", {})


class TestHostileRepository:
    @pytest.mark.parametrize("sandbox", MODES)
    def test_core_worktree_cannot_point_outside(
        self, repo: Path, tmp_path: Path, sandbox: bool
    ) -> None:
        """A repository whose core.worktree names another directory still shows the workspace."""
        elsewhere = tmp_path / "elsewhere"
        elsewhere.mkdir()
        (elsewhere / "a.txt").write_text("secret from outside\n")
        git(repo, "config", "core.worktree", str(elsewhere))
        diff = runtime_for(repo, sandbox=sandbox).dispatch("git_diff", {}).output["diff"]
        assert "secret from outside" not in diff
        assert "+TWO" in diff
        assert "secret from outside" in git(repo, "diff")  # plain git would show it

    @pytest.mark.parametrize("sandbox", MODES)
    def test_no_configured_command_ever_runs(
        self, repo: Path, tmp_path: Path, sandbox: bool
    ) -> None:
        """Pager, external diff, fsmonitor, textconv, diff drivers, filters, hooks: none run."""
        marks = plant_hostile_config(repo, tmp_path)
        runtime = runtime_for(repo, sandbox=sandbox)
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


class TestRepositoryHead:
    """What a run records of its repository: HEAD and the branch, read from the files."""

    def test_branch_and_commit(self, repo: Path) -> None:
        """A branch with a commit: its id and name, loose or packed."""
        commit = git(repo, "rev-parse", "HEAD").strip()
        assert repository_head(Workspace(repo)) == (commit, "main")
        git(repo, "pack-refs", "--all")
        assert not (repo / ".git" / "refs" / "heads" / "main").exists()
        assert repository_head(Workspace(repo)) == (commit, "main")

    def test_detached_and_unborn(self, repo: Path, tmp_path: Path) -> None:
        """Detached: the commit, no branch. Before the first commit: the branch, no commit."""
        commit = git(repo, "rev-parse", "HEAD").strip()
        git(repo, "checkout", "-q", "--detach")
        assert repository_head(Workspace(repo)) == (commit, None)
        fresh = tmp_path / "fresh"
        fresh.mkdir()
        git(fresh, "init", "-q", "-b", "trunk")
        assert repository_head(Workspace(fresh)) == (None, "trunk")

    def test_a_ref_that_leads_outside_is_not_followed(self, repo: Path, tmp_path: Path) -> None:
        """A HEAD naming a ref outside the repository's files, or a .git leading outside the
        workspace, yields nothing read from there."""
        secret = tmp_path / "secret"
        secret.write_text("0" * 40 + "\n")
        (repo / ".git" / "HEAD").write_text("ref: refs/../../../secret\n")
        assert repository_head(Workspace(repo)) == (None, None)
        (repo / ".git" / "HEAD").write_text("ref: refs/heads/link\n")
        (repo / ".git" / "refs" / "heads" / "link").symlink_to(secret)
        assert repository_head(Workspace(repo)) == (None, "link")
        elsewhere = tmp_path / "elsewhere"
        elsewhere.mkdir()
        (elsewhere / ".git").write_text(f"gitdir: {repo / '.git'}\n")
        with pytest.raises(GitError, match="leads outside the workspace"):
            repository_head(Workspace(elsewhere))

    def test_no_repository(self, tmp_path: Path) -> None:
        """A workspace that is no repository: GitError, as for the git tools."""
        with pytest.raises(GitError, match="not a git repository"):
            repository_head(Workspace(tmp_path))
