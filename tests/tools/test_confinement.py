from __future__ import annotations

import os
import stat
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mini_harness import MemorySink, ToolCallError, ToolRuntime
from mini_harness.errors import FileRefusedError, WorkspaceError
from mini_harness.events import ToolCalled, ToolFailed
from mini_harness.runtime.confined import file_kind
from mini_harness.tools import Workspace, default_registry
from mini_harness.tools.workspace import quote_path

# (path, the end of the message) for paths every tool must refuse.
HOSTILE: list[tuple[str, str]] = [
    ("../outside/secret.txt", 'Path "../outside/secret.txt" leads outside the workspace'),
    ("src/../../outside", 'Path "src/../../outside" leads outside the workspace'),
    # Empty and "." segments do not count as a level: caught by the `..` count itself.
    ("src//.././../outside", 'Path "src//.././../outside" leads outside the workspace'),
    ("./..", 'Path "./.." leads outside the workspace'),
    (
        "/etc/passwd",
        'Path "/etc/passwd" is absolute; use a path relative to the workspace root',
    ),
    ("link_outside", 'Path "link_outside" resolves outside the workspace through a symlink'),
    (
        "link_outside_dir/secret.txt",
        'Path "link_outside_dir/secret.txt" resolves outside the workspace through a symlink',
    ),
    # Paths are literal: an encoded ".." is a file name that does not exist here.
    ("%2e%2e/outside/secret.txt", 'Path "%2e%2e/outside/secret.txt" does not exist'),
    ("..%2foutside%2fsecret.txt", 'Path "..%2foutside%2fsecret.txt" does not exist'),
    ("~/secret.txt", 'Path "~/secret.txt" does not exist'),
    ("src/app.py\0.txt", 'Path "src/app.py\\u0000.txt" contains a NUL byte'),
    ("loop_a", 'Path "loop_a" is a symlink loop'),
]
TOOLS: dict[str, Callable[[str], dict[str, Any]]] = {
    "read_file": lambda path: {"path": path},
    "list_files": lambda path: {"path": path},
    "search_text": lambda path: {"query": "needle", "path": path},
}


def dispatch_failure(runtime: ToolRuntime, sink: MemorySink, name: str, data: Any) -> ToolFailed:
    """Dispatch a call that must fail; check it was recorded and return the ToolFailed."""
    with pytest.raises(ToolCallError):
        runtime.dispatch(name, data)
    called, failed = sink.events[-2:]
    assert isinstance(called, ToolCalled)
    assert isinstance(failed, ToolFailed)
    assert called.call_id == failed.call_id
    assert called.input == data
    return failed


def no_hang(function: Any, *args: Any) -> Any:
    """Run `function` in a thread and fail the test (instead of hanging) after 10 s."""
    outcome: list[Any] = []

    def target() -> None:
        try:
            outcome.append(function(*args))
        except BaseException as exc:  # handed back to the test below
            outcome.append(exc)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(10)
    assert outcome, "the call hung"
    if isinstance(outcome[0], BaseException):
        raise outcome[0]
    return outcome[0]


class TestHostilePaths:
    @pytest.mark.parametrize("tool", sorted(TOOLS))
    @pytest.mark.parametrize(("path", "message"), HOSTILE)
    def test_refused_and_recorded(
        self, runtime: ToolRuntime, sink: MemorySink, tool: str, path: str, message: str
    ) -> None:
        """Every tool refuses a hostile path; the failure is recorded naming the path."""
        failed = dispatch_failure(runtime, sink, tool, TOOLS[tool](path))
        assert failed.error.kind == "handler_error"
        assert failed.error.message == f"Tool {tool} failed: WorkspaceError: {message}"
        assert "SECRET" not in failed.error.message

    @pytest.mark.parametrize(
        ("tool", "message"),
        [
            ("read_file", 'Path "pipe" is a FIFO (named pipe), not a regular file'),
            ("search_text", 'Path "pipe" is a FIFO (named pipe), not a regular file'),
            ("list_files", 'Path "pipe" is a FIFO (named pipe), not a directory'),
        ],
    )
    def test_fifo_is_refused_without_hanging(
        self, runtime: ToolRuntime, sink: MemorySink, tool: str, message: str
    ) -> None:
        """A FIFO is refused by its type before anything opens it, so no call blocks."""
        with pytest.raises(ToolCallError):
            no_hang(runtime.dispatch, tool, TOOLS[tool]("pipe"))
        failed = sink.events[-1]
        assert isinstance(failed, ToolFailed)
        assert failed.error.kind == "handler_error"
        assert failed.error.message == f"Tool {tool} failed: WorkspaceError: {message}"

    @pytest.mark.parametrize(
        ("tool", "data", "message"),
        [
            (
                "read_file",
                {"path": ""},
                "Invalid input for read_file.path: expected a string of at least 1 character",
            ),
            ("read_file", {"path": 7}, "Invalid input for read_file.path: expected string"),
            (
                "read_file",
                {"path": "a", "follow": True},
                'Invalid input for read_file: unexpected property "follow"',
            ),
            (
                "list_files",
                {"path": ["..", "etc"]},
                "Invalid input for list_files.path: expected string",
            ),
            (
                "search_text",
                {"query": "x", "path": "a/" * 2049},
                "Invalid input for search_text.path: expected a string of at most 4096 characters",
            ),
            (
                "search_text",
                {"query": "x", "maxResults": 0},
                "Invalid input for search_text.maxResults: expected a number >= 1",
            ),
        ],
    )
    def test_schema_problems_are_invalid_input(
        self, runtime: ToolRuntime, sink: MemorySink, tool: str, data: Any, message: str
    ) -> None:
        """Input of the wrong shape never reaches a handler: it is invalid_input."""
        failed = dispatch_failure(runtime, sink, tool, data)
        assert failed.error.kind == "invalid_input"
        assert failed.error.message == message

    def test_nothing_outside_is_ever_listed_or_found(self, runtime: ToolRuntime) -> None:
        """Walking the whole workspace never yields a file from outside it."""
        listed = runtime.dispatch("list_files", {}).output
        found = runtime.dispatch("search_text", {"query": "SECRET"}).output
        assert isinstance(listed, dict)
        assert isinstance(found, dict)
        assert not [f for f in listed["files"] if "outside" in f["path"]]
        assert found["matches"] == []


class TestSpecialFiles:
    def test_device_file_is_refused(self) -> None:
        """A character device is named as such and never opened."""
        workspace = Workspace("/dev")
        with pytest.raises(WorkspaceError) as caught:
            workspace.locate_file("null")
        assert caught.value.message == 'Path "null" is a character device, not a regular file'
        assert caught.value.path == "null"

    @pytest.mark.skipif(os.geteuid() != 0, reason="mknod needs root")
    def test_device_node_inside_the_workspace(self, tmp_path: Path) -> None:
        """A device node inside the workspace is refused, not read."""
        os.mknod(tmp_path / "zero", 0o600 | stat.S_IFCHR, os.makedev(1, 5))
        with pytest.raises(WorkspaceError, match="is a character device, not a regular file"):
            Workspace(tmp_path).locate_file("zero")

    def test_fifo_swapped_in_after_the_check_does_not_block(self, root: Path) -> None:
        """Opening is non-blocking, so a FIFO that replaced a checked file is refused."""
        with pytest.raises(FileRefusedError) as caught:
            no_hang(Workspace(root).read, str(root / "pipe"), 1000)
        assert caught.value.kind == "FIFO (named pipe)"

    def test_symlink_swapped_in_after_the_check_is_not_followed(self, root: Path) -> None:
        """The final open does not follow a symlink that appeared after resolution."""
        with pytest.raises(OSError, match="Too many levels of symbolic links"):
            Workspace(root).read(str(root / "link_outside"), 1000)

    @pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc")
    def test_directory_swapped_for_a_link_after_the_check_is_caught(self, root: Path) -> None:
        """A file opened through a directory that became a link outside is not read."""
        workspace = Workspace(root)
        opened_through_link = str(root / "link_outside_dir" / "secret.txt")
        with pytest.raises(FileRefusedError) as caught:
            workspace.read(opened_through_link, 1000)
        assert caught.value.outside is True

    def test_planted_gitignore_fifo_or_link_is_ignored(self, tmp_path: Path) -> None:
        """A .gitignore that is a FIFO or a link outside neither hangs nor steers a walk."""
        (tmp_path / "outside").mkdir()
        (tmp_path / "outside" / ".gitignore").write_text("*.py\n")
        workspace = tmp_path / "ws"
        (workspace / "sub").mkdir(parents=True)
        os.mkfifo(workspace / ".gitignore")
        (workspace / "sub" / ".gitignore").symlink_to(tmp_path / "outside" / ".gitignore")
        (workspace / "sub" / "a.py").write_text("needle\n")
        runtime = ToolRuntime(default_registry(workspace), MemorySink())
        output = no_hang(runtime.dispatch, "list_files", {}).output
        assert [f["path"] for f in output["files"]] == ["sub/a.py"]


class TestResolver:
    @pytest.mark.parametrize(("path", "message"), HOSTILE)
    def test_a_refusal_carries_the_path_as_given(self, root: Path, path: str, message: str) -> None:
        """WorkspaceError.path is the caller's path, unchanged, for every kind of refusal."""
        with pytest.raises(WorkspaceError) as caught:
            Workspace(root).locate(path)
        assert (caught.value.path, caught.value.message) == (path, message)

    @pytest.mark.parametrize(
        ("locate", "path", "message"),
        [
            ("locate_file", "src", 'Path "src" is a directory; use list_files to see inside it'),
            ("locate_file", "pipe", 'Path "pipe" is a FIFO (named pipe), not a regular file'),
            ("locate_dir", "README.md", 'Path "README.md" is a regular file, not a directory'),
            (
                "locate",
                "caf\udce9.txt",
                'Path "caf\\udce9.txt" is not valid Unicode; only UTF-8 file names can be read',
            ),
        ],
    )
    def test_kind_and_encoding_refusals_carry_the_path(
        self, root: Path, locate: str, path: str, message: str
    ) -> None:
        """Wrong kinds of file and undecodable names are refused naming the path."""
        with pytest.raises(WorkspaceError) as caught:
            getattr(Workspace(root), locate)(path)
        assert (caught.value.path, caught.value.message) == (path, message)

    def test_dotdot_after_two_levels_stays_inside(self, root: Path) -> None:
        """Each named segment is one level down, so two `..` after two names are fine."""
        found = Workspace(root).locate_file("src/pkg/../../README.md")
        assert (found.relative, found.real) == ("README.md", str(root.resolve() / "README.md"))

    def test_the_root_itself_is_dot(self, root: Path) -> None:
        """The root, however it is spelt, is "." relative to itself."""
        workspace = Workspace(root)
        for spelling in ("", ".", "./", "src/.."):
            assert workspace.locate_dir(spelling).relative == "."
        assert workspace.relative(str(workspace.root)) == "."

    def test_a_sibling_with_the_root_as_prefix_is_outside(self, tmp_path: Path) -> None:
        """`/x/ws2` is not inside `/x/ws`, though its name starts with the root's."""
        (tmp_path / "ws").mkdir()
        workspace = Workspace(tmp_path / "ws")
        assert workspace.contains(str(tmp_path / "ws"))
        assert workspace.contains(str(tmp_path / "ws" / "a"))
        assert not workspace.contains(str(tmp_path / "ws2"))
        assert not workspace.contains(str(tmp_path / "ws2" / "a"))

    def test_the_root_directory_of_the_system_contains_everything(self) -> None:
        """A workspace at `/` contains every absolute path (its separator is not doubled)."""
        assert Workspace("/").contains("/etc/hostname")

    @pytest.mark.parametrize(
        ("mode", "kind"),
        [
            (stat.S_IFREG, "regular file"),
            (stat.S_IFDIR, "directory"),
            (stat.S_IFIFO, "FIFO (named pipe)"),
            (stat.S_IFCHR, "character device"),
            (stat.S_IFBLK, "block device"),
            (stat.S_IFSOCK, "socket"),
            (0, "special file"),
        ],
    )
    def test_each_kind_of_file_is_named(self, mode: int, kind: str) -> None:
        """Refusal messages name the kind of file in words."""
        assert file_kind(mode | 0o644) == kind

    def test_a_file_that_grew_since_fstat_is_read_to_the_limit(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """The size fstat gave is a hint: a file longer than it is read on, whole up to the
        limit, and refused past it."""
        path = tmp_path / "f.txt"
        workspace = Workspace(tmp_path)
        real_fstat = os.fstat

        def stale_fstat(fd: int) -> os.stat_result:
            info = list(real_fstat(fd))
            info[stat.ST_SIZE] = 10  # as if it had grown since
            return os.stat_result(info)

        monkeypatch.setattr(os, "fstat", stale_fstat)
        data = bytes(range(256)) * 1000
        path.write_bytes(data)
        assert workspace.read(str(path), len(data)) == data
        with pytest.raises(FileRefusedError) as caught:
            workspace.read(str(path), len(data) - 1)
        assert caught.value.size == len(data)
        # The reads stop exactly at the limit (11 bytes asked, then 64 KiB): one more
        # read must still find the bytes past it.
        limit = 11 + (1 << 16)
        with pytest.raises(FileRefusedError) as caught:
            workspace.read(str(path), limit)
        assert caught.value.size == 11 + 2 * (1 << 16)


class TestHardLinks:
    def test_a_hard_link_to_an_outside_file_is_read_as_workspace_content(
        self, tmp_path: Path
    ) -> None:
        """A hard link is the file itself under a name inside the workspace: whoever made
        it put that file in the workspace, and all three tools treat it as such."""
        (tmp_path / "outside").mkdir()
        (tmp_path / "outside" / "shared.txt").write_text("SHARED needle\n")
        workspace = tmp_path / "ws"
        workspace.mkdir()
        os.link(tmp_path / "outside" / "shared.txt", workspace / "linked.txt")
        runtime = ToolRuntime(default_registry(workspace), MemorySink())
        listed = runtime.dispatch("list_files", {}).output
        read = runtime.dispatch("read_file", {"path": "linked.txt"}).output
        found = runtime.dispatch("search_text", {"query": "needle"}).output
        assert listed["files"] == [{"path": "linked.txt", "size": 14}]
        assert read["text"] == "SHARED needle\n"
        assert found["count"] == 1


class TestWorkspaceRoot:
    def test_root_must_be_a_directory(self, tmp_path: Path) -> None:
        """A workspace on a missing directory is refused with the path in the message."""
        missing = tmp_path / "missing"
        with pytest.raises(WorkspaceError) as caught:
            Workspace(missing)
        assert caught.value.message == f'Workspace root "{missing}" is not a directory'
        assert caught.value.path == str(missing)

    def test_root_is_resolved(self, root: Path, tmp_path: Path) -> None:
        """A workspace reached through a symlink is confined to the real directory."""
        (tmp_path / "alias").symlink_to(root)
        workspace = Workspace(tmp_path / "alias")
        assert workspace.root == root.resolve()
        assert workspace.locate("src/app.py").real == str(root.resolve() / "src/app.py")

    def test_inner_dotdot_that_stays_inside_is_fine(self, root: Path) -> None:
        """`src/../README.md` stays inside and is shown normalised."""
        found = Workspace(root).locate_file("src/../README.md")
        assert found.relative == "README.md"

    def test_symlink_inside_is_followed(self, root: Path) -> None:
        """A symlink to a file inside the workspace reads as that file."""
        found = Workspace(root).locate_file("link_inside")
        assert found.real == str(root.resolve() / "src/app.py")
        assert found.relative == "link_inside"

    def test_current_directory_is_the_default(
        self, root: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Workspace.current() is the working directory."""
        monkeypatch.chdir(root)
        assert Workspace.current().root == root.resolve()


SEGMENTS = [
    "..",
    ".",
    "",
    "src",
    "pkg",
    "app.py",
    "link_inside",
    "link_dir",
    "link_outside",
    "link_outside_dir",
    "secret.txt",
    "outside",
    "ws",
    "loop_a",
    "pipe",
    "%2e%2e",
    "\0",
    "~",
    "\\..",
    "..\\",
    "ünïcødé",
    "README.md",
]


# differing_executors: `make mutate` runs each test again in the same process.
NO_ESCAPE_CHECKS = [HealthCheck.function_scoped_fixture, HealthCheck.differing_executors]


class TestNoEscape:
    @given(parts=st.lists(st.sampled_from(SEGMENTS), min_size=1, max_size=6), lead=st.booleans())
    @settings(max_examples=300, suppress_health_check=NO_ESCAPE_CHECKS)
    def test_random_paths_never_escape(self, root: Path, parts: list[str], lead: bool) -> None:
        """Whatever path is composed, it is refused or resolves inside the workspace."""
        self._check(root, ("/" if lead else "") + "/".join(parts))

    @pytest.mark.thorough
    @given(parts=st.lists(st.sampled_from(SEGMENTS), min_size=1, max_size=10), lead=st.booleans())
    @settings(max_examples=5000, suppress_health_check=NO_ESCAPE_CHECKS)
    def test_random_paths_never_escape_thorough(
        self, root: Path, parts: list[str], lead: bool
    ) -> None:
        """The same property over many more and longer paths."""
        self._check(root, ("/" if lead else "") + "/".join(parts))

    @staticmethod
    def _check(root: Path, path: str) -> None:
        runtime = ToolRuntime(default_registry(root), MemorySink())
        real_root = str(root.resolve())
        outcome: object
        try:
            outcome = Workspace(root).locate(path).real
        except WorkspaceError as exc:
            outcome = exc.message
        if isinstance(outcome, str) and outcome.startswith("/"):
            assert outcome == real_root or outcome.startswith(real_root + os.sep)
        else:
            assert quote_path(path) in str(outcome)
        for tool, make in TOOLS.items():
            try:
                shown = orjson.dumps(no_hang(runtime.dispatch, tool, make(path)).output).decode()
            except ToolCallError as exc:
                shown = exc.kind
                assert shown in ("handler_error", "invalid_input")
            assert "SECRET" not in shown


class TestProtectedPaths:
    def test_controls_are_protected_at_any_depth(self, tmp_path: Path) -> None:
        """.git and .mini-harness entries, wherever they are, hold the agent's controls."""
        workspace = Workspace(tmp_path)
        root = str(workspace.root)
        for relative in (".git", ".git/config", ".mini-harness/policy.toml", "sub/.git/hooks/x"):
            assert workspace.protects(os.path.join(root, relative)), relative
        for relative in ("src/app.py", ".github/workflows/ci.yml", "git", ".gitignore"):
            assert not workspace.protects(os.path.join(root, relative)), relative

    def test_the_open_transcript_and_its_sidecars_are_protected(self, tmp_path: Path) -> None:
        """A transcript inside the workspace, and its torn-tail sidecars, are protected."""
        workspace = Workspace(tmp_path, protected=(tmp_path / "logs" / "run.jsonl",))
        logs = os.path.join(str(workspace.root), "logs")
        assert workspace.protects(os.path.join(logs, "run.jsonl"))
        assert workspace.protects(os.path.join(logs, "run.jsonl.torn-120"))
        assert not workspace.protects(os.path.join(logs, "run.jsonl.bak"))
        assert not workspace.protects(os.path.join(logs, "other.jsonl"))
