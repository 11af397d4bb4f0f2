"""apply_patch: unified diffs applied all or nothing, inside the workspace only."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from mini_harness import MemorySink, ToolRuntime
from mini_harness.errors import InvalidInputError, ToolHandlerError
from mini_harness.events import ToolSucceeded
from mini_harness.runtime import ToolAnnotations, ToolRegistry
from mini_harness.tools import register_coding_tools


def snapshot(root: Path) -> dict[str, bytes | str]:
    """Every entry below root: file bytes, or the kind of a non-file (byte-identical check)."""
    out: dict[str, bytes | str] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            key = str(path.relative_to(root))
            if path.is_symlink():
                out[key] = "link->" + os.readlink(path)
            elif path.is_dir():
                out[key] = "dir"
            else:
                out[key] = path.read_bytes() + oct(path.stat().st_mode).encode()
    return out


@pytest.fixture(name="ws")
def _ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    (root / "src/app.py").write_text("def main():\n    return 1\n\n\nprint(main())\n")
    (root / "notes.txt").write_text("alpha\nbeta\ngamma\n")
    (root / "crlf.txt").write_bytes(b"one\r\ntwo\r\n")
    (root / "blob.bin").write_bytes(b"\x00\x01binary")
    (tmp_path / "outside.txt").write_text("outside\n")
    (root / "link.txt").symlink_to("notes.txt")
    return root


@pytest.fixture(name="runtime")
def _runtime(ws: Path, sink: MemorySink) -> ToolRuntime:
    registry = ToolRegistry()
    register_coding_tools(registry, ws, sandbox=False)
    return ToolRuntime(registry, sink)


CHANGE_APP = """\
diff --git a/src/app.py b/src/app.py
--- a/src/app.py
+++ b/src/app.py
@@ -1,2 +1,2 @@
 def main():
-    return 1
+    return 2
"""

ADD_FILE = """\
--- /dev/null
+++ b/docs/new.md
@@ -0,0 +1,2 @@
+# New
+text
"""

DELETE_NOTES = """\
--- a/notes.txt
+++ /dev/null
@@ -1,3 +0,0 @@
-alpha
-beta
-gamma
"""

BAD_HUNK = """\
--- a/notes.txt
+++ b/notes.txt
@@ -1,3 +1,3 @@
 alpha
-BETA
+delta
 gamma
"""


class TestApplying:
    def test_changes_adds_and_deletes_files(self, ws: Path, runtime: ToolRuntime) -> None:
        """One patch changes a file, adds one (with its directory) and deletes one."""
        result = runtime.dispatch("apply_patch", {"patch": CHANGE_APP + ADD_FILE + DELETE_NOTES})
        assert (ws / "src/app.py").read_text().startswith("def main():\n    return 2\n")
        assert (ws / "docs/new.md").read_text() == "# New\ntext\n"
        assert not (ws / "notes.txt").exists()
        assert result.output["files"] == [
            {"path": "src/app.py", "action": "modified", "hunks": 1},
            {"path": "docs/new.md", "action": "added", "hunks": 1},
            {"path": "notes.txt", "action": "deleted", "hunks": 1},
        ]

    def test_effects_are_recorded_with_hashes(
        self, ws: Path, runtime: ToolRuntime, sink: MemorySink
    ) -> None:
        """The ToolSucceeded lists each path with its sha256 before and after (null: absent)."""
        before = hashlib.sha256((ws / "notes.txt").read_bytes()).hexdigest()
        runtime.dispatch("apply_patch", {"patch": ADD_FILE + DELETE_NOTES})
        after = hashlib.sha256(b"# New\ntext\n").hexdigest()
        succeeded = [e for e in sink.events if isinstance(e, ToolSucceeded)]
        assert succeeded[-1].effects == (
            {"path": "docs/new.md", "before": None, "after": after},
            {"path": "notes.txt", "before": before, "after": None},
        )

    def test_hunk_found_at_an_offset(self, ws: Path, runtime: ToolRuntime) -> None:
        """A hunk whose line numbers are off still applies where its lines are."""
        patch = CHANGE_APP.replace("@@ -1,2 +1,2 @@", "@@ -3,2 +3,2 @@")
        runtime.dispatch("apply_patch", {"patch": patch})
        assert "return 2" in (ws / "src/app.py").read_text()

    def test_crlf_file_keeps_its_line_endings(self, ws: Path, runtime: ToolRuntime) -> None:
        """Lines added to a CRLF file get CRLF endings; the patch may use plain LF."""
        patch = "--- a/crlf.txt\n+++ b/crlf.txt\n@@ -1,2 +1,2 @@\n one\n-two\n+three\n"
        runtime.dispatch("apply_patch", {"patch": patch})
        assert (ws / "crlf.txt").read_bytes() == b"one\r\nthree\r\n"

    def test_no_newline_at_end_of_file(self, ws: Path, runtime: ToolRuntime) -> None:
        """The "No newline at end of file" marker is honoured on the new side."""
        patch = (
            "--- a/notes.txt\n+++ b/notes.txt\n@@ -2,2 +2,2 @@\n beta\n-gamma\n+omega\n"
            "\\ No newline at end of file\n"
        )
        runtime.dispatch("apply_patch", {"patch": patch})
        assert (ws / "notes.txt").read_text() == "alpha\nbeta\nomega"

    def test_keeps_the_file_mode(self, ws: Path, runtime: ToolRuntime) -> None:
        """An executable file stays executable after it is patched."""
        (ws / "src/app.py").chmod(0o755)
        runtime.dispatch("apply_patch", {"patch": CHANGE_APP})
        assert (ws / "src/app.py").stat().st_mode & 0o777 == 0o755

    @pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
    def test_applies_what_git_diff_prints(self, tmp_path: Path) -> None:
        """A patch produced by `git diff` between two trees turns the first into the second."""
        old, new = tmp_path / "old", tmp_path / "new"
        for root, body in ((old, "a\nb\nc\n" * 20), (new, "a\nB\nc\n" * 20 + "tail\n")):
            (root / "pkg").mkdir(parents=True)
            (root / "pkg/mod.py").write_text(body)
        (old / "gone.txt").write_text("bye\n")
        (new / "pkg/added.txt").write_text("hello\n")
        diff = subprocess.run(
            ["git", "diff", "--no-index", "old", "new"],
            cwd=tmp_path, capture_output=True, text=True, check=False,
        ).stdout.replace("a/old/", "a/").replace("b/new/", "b/")  # fmt: skip
        registry = ToolRegistry()
        register_coding_tools(registry, old, sandbox=False)
        ToolRuntime(registry).dispatch("apply_patch", {"patch": diff})
        assert snapshot(old) == snapshot(new)


class TestConflicts:
    def test_conflict_leaves_the_tree_byte_identical(self, ws: Path, runtime: ToolRuntime) -> None:
        """When one file's hunk fails, the other files of the patch are not changed either."""
        before = snapshot(ws)
        with pytest.raises(ToolHandlerError):
            runtime.dispatch("apply_patch", {"patch": CHANGE_APP + ADD_FILE + BAD_HUNK})
        assert snapshot(ws) == before

    def test_conflict_names_file_and_hunk_and_shows_current_lines(
        self, runtime: ToolRuntime
    ) -> None:
        """The error says which hunk of which file failed and shows the lines there now."""
        with pytest.raises(ToolHandlerError) as caught:
            runtime.dispatch("apply_patch", {"patch": BAD_HUNK})
        message = caught.value.message
        assert 'Hunk 1 (@@ -1,3 +1,3 @@) of "notes.txt" does not apply' in message
        assert "Nothing was changed" in message
        assert "1| alpha\n" in message
        assert "2| beta\n" in message

    def test_adding_an_existing_file_conflicts(self, ws: Path, runtime: ToolRuntime) -> None:
        """A patch that adds a file which exists already changes nothing."""
        patch = ADD_FILE.replace("docs/new.md", "notes.txt")
        before = snapshot(ws)
        with pytest.raises(ToolHandlerError, match="exists already"):
            runtime.dispatch("apply_patch", {"patch": patch})
        assert snapshot(ws) == before

    def test_changing_a_missing_file_conflicts(self, runtime: ToolRuntime) -> None:
        """A patch for a file that does not exist says so."""
        with pytest.raises(ToolHandlerError, match="does not exist"):
            runtime.dispatch("apply_patch", {"patch": CHANGE_APP.replace("app.py", "gone.py")})


class TestRefusals:
    @pytest.mark.parametrize(
        ("path", "match"),
        [
            ("../outside.txt", "outside the workspace"),
            ("/etc/hostname", "absolute"),
            ("link.txt", "symlink"),
            ("blob.bin", "binary"),
        ],
    )
    def test_refused_targets(self, ws: Path, runtime: ToolRuntime, path: str, match: str) -> None:
        """Paths outside the workspace, absolute paths, symlinks and binary files are refused."""
        patch = f"--- a/{path}\n+++ b/{path}\n@@ -1 +1 @@\n-alpha\n+x\n"
        before = snapshot(ws.parent)
        with pytest.raises(ToolHandlerError, match=match):
            runtime.dispatch(
                "apply_patch", {"patch": patch.replace("a//", "/").replace("b//", "/")}
            )
        assert snapshot(ws.parent) == before

    def test_new_file_outside_is_refused(self, ws: Path, runtime: ToolRuntime) -> None:
        """Adding a file above the workspace root is refused."""
        with pytest.raises(ToolHandlerError, match="outside the workspace"):
            runtime.dispatch("apply_patch", {"patch": ADD_FILE.replace("docs/new.md", "../x.md")})
        assert not (ws.parent / "x.md").exists()

    def test_renames_are_refused(self, ws: Path, runtime: ToolRuntime) -> None:
        """A rename (git's headers, or different paths on both sides) changes nothing."""
        before = snapshot(ws)
        git_rename = "diff --git a/notes.txt b/n.txt\nrename from notes.txt\nrename to n.txt\n"
        with pytest.raises(ToolHandlerError, match="renames and copies are not supported"):
            runtime.dispatch("apply_patch", {"patch": git_rename})
        moved = BAD_HUNK.replace("+++ b/notes.txt", "+++ b/other.txt")
        with pytest.raises(ToolHandlerError, match="renames"):
            runtime.dispatch("apply_patch", {"patch": moved})
        assert snapshot(ws) == before

    def test_binary_patch_is_refused(self, runtime: ToolRuntime) -> None:
        """A git binary patch is refused with a message saying so."""
        patch = "diff --git a/x.png b/x.png\nBinary files a/x.png and b/x.png differ\n"
        with pytest.raises(ToolHandlerError, match="binary patches cannot be applied"):
            runtime.dispatch("apply_patch", {"patch": patch})

    def test_text_that_is_no_patch(self, runtime: ToolRuntime) -> None:
        """Text without file headers and hunks is refused, saying what was expected."""
        with pytest.raises(ToolHandlerError, match="no file changes found"):
            runtime.dispatch("apply_patch", {"patch": "just some words\n"})

    def test_empty_patch_is_invalid_input(self, runtime: ToolRuntime) -> None:
        """An empty patch string fails validation before anything runs."""
        with pytest.raises(InvalidInputError):
            runtime.dispatch("apply_patch", {"patch": ""})


class TestAnnotations:
    def test_coding_tool_hints(self, runtime: ToolRuntime) -> None:
        """git tools are read-only; apply_patch and run_command are destructive, not idempotent."""
        hints = {
            tool.name: tool.definition.annotations or ToolAnnotations() for tool in runtime.registry
        }
        for name in ("git_status", "git_diff"):
            assert hints[name].read_only_hint is True
            assert hints[name].safe_to_repeat is True
        for name in ("apply_patch", "run_command"):
            assert hints[name].read_only_hint is False
            assert hints[name].destructive_hint is True
            assert hints[name].safe_to_repeat is False


class TestParsing:
    def test_diff_u_headers_with_timestamps(self, ws: Path, runtime: ToolRuntime) -> None:
        """`diff -u` headers with tab-separated timestamps and no a/ b/ prefixes apply."""
        patch = (
            "--- notes.txt\t2026-01-01 10:00:00.000000000 +0000\n"
            "+++ notes.txt\t2026-01-02 10:00:00.000000000 +0000\n"
            "@@ -2 +2 @@\n-beta\n+BETA\n"
        )
        runtime.dispatch("apply_patch", {"patch": patch})
        assert (ws / "notes.txt").read_text() == "alpha\nBETA\ngamma\n"

    def test_quoted_path_with_a_space(self, ws: Path, runtime: ToolRuntime) -> None:
        """git's C-quoted paths are unquoted."""
        patch = '--- /dev/null\n+++ "b/with space\\t.txt"\n@@ -0,0 +1 @@\n+hi\n'
        runtime.dispatch("apply_patch", {"patch": patch})
        assert (ws / "with space\t.txt").read_text() == "hi\n"

    def test_wrong_line_counts_are_refused(self, runtime: ToolRuntime) -> None:
        """A hunk whose header promises more lines than it has is refused, naming the hunk."""
        patch = "--- a/notes.txt\n+++ b/notes.txt\n@@ -1,3 +1,3 @@\n alpha\n-beta\n+b\n"
        with pytest.raises(ToolHandlerError, match=r"expected 3 old and 3 new lines, got 2 and 2"):
            runtime.dispatch("apply_patch", {"patch": patch})

    def test_same_file_twice_is_refused(self, runtime: ToolRuntime) -> None:
        """A patch naming one file in two sections is refused before anything is checked."""
        with pytest.raises(ToolHandlerError, match="appears twice"):
            runtime.dispatch("apply_patch", {"patch": CHANGE_APP + CHANGE_APP})
        spelled_twice = CHANGE_APP + CHANGE_APP.replace("b/src/app.py", "b/./src/app.py")
        with pytest.raises(ToolHandlerError, match="appears twice"):
            runtime.dispatch("apply_patch", {"patch": spelled_twice})


class TestWriteFailures:
    def test_new_file_below_a_symlinked_directory_is_refused(
        self, ws: Path, runtime: ToolRuntime
    ) -> None:
        """A new file whose directory is a symlink (even one inside) is refused."""
        (ws / "srclink").symlink_to("src")
        with pytest.raises(ToolHandlerError, match="symlink"):
            runtime.dispatch("apply_patch", {"patch": ADD_FILE.replace("docs/", "srclink/")})
        assert not (ws / "src/new.md").exists()

    def test_failed_write_puts_everything_back(
        self, ws: Path, runtime: ToolRuntime, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """When a later file cannot be written, the files already replaced, added or deleted
        get their old bytes and modes back."""
        (ws / "notes.txt").chmod(0o640)
        before = snapshot(ws)
        failed: list[str] = []

        def failing(real: Callable[..., None]) -> Callable[..., None]:
            def replace(src: object, dst: object, **kwargs: object) -> None:
                if os.path.basename(str(dst)) == "app.py":
                    failed.append(str(dst))
                    raise OSError(28, "No space left on device")
                real(src, dst, **kwargs)

            return replace

        monkeypatch.setattr(os, "replace", failing(os.replace))
        monkeypatch.setattr(os, "rename", failing(os.rename))
        patch = DELETE_NOTES + ADD_FILE + CHANGE_APP
        with pytest.raises(ToolHandlerError, match="No space left on device"):
            runtime.dispatch("apply_patch", {"patch": patch})
        monkeypatch.undo()
        assert failed
        assert snapshot(ws) == before
