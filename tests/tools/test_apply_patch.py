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
from mini_harness.events import FileEffect, ToolSucceeded
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
@@ -1,3 +1,3 @@
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
            FileEffect("docs/new.md", None, after),
            FileEffect("notes.txt", before, None),
        )

    def test_hunk_found_at_an_offset(self, ws: Path, runtime: ToolRuntime) -> None:
        """A hunk whose line numbers are off still applies where its lines are."""
        patch = CHANGE_APP.replace("@@ -1,3 +1,3 @@", "@@ -3,3 +3,3 @@")
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

    def test_different_names_without_git_headers_are_refused(
        self, ws: Path, runtime: ToolRuntime
    ) -> None:
        """---/+++ lines naming two files, without git's rename lines, change nothing."""
        before = snapshot(ws)
        moved = BAD_HUNK.replace("+++ b/notes.txt", "+++ b/other.txt")
        with pytest.raises(ToolHandlerError, match="a rename needs git's `rename from`"):
            runtime.dispatch("apply_patch", {"patch": moved})
        assert snapshot(ws) == before

    def test_two_names_in_a_git_section_without_rename_lines_are_refused(
        self, ws: Path, runtime: ToolRuntime
    ) -> None:
        """A git section whose ---/+++ name two files needs rename lines: without them it
        is no silent rename (the approval prompt would not show one), and nothing changes."""
        before = snapshot(ws)
        moved = "diff --git a/notes.txt b/other.txt\n" + BAD_HUNK.replace(
            "+++ b/notes.txt", "+++ b/other.txt"
        )
        with pytest.raises(ToolHandlerError, match="without git's `rename from`"):
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
            "@@ -1,3 +1,3 @@\n alpha\n-beta\n+BETA\n gamma\n"
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

    def test_a_file_replaced_by_a_directory_is_refused(
        self, ws: Path, runtime: ToolRuntime
    ) -> None:
        """A patch that deletes a file and adds one below a directory of the same name (as
        git diff prints such a commit) is refused with the reason, and changes nothing."""
        (ws / "p").write_text("x\n")
        before = snapshot(ws)
        patch = (
            "diff --git a/p b/p\ndeleted file mode 100644\n--- a/p\n+++ /dev/null\n"
            "@@ -1 +0,0 @@\n-x\n"
            "diff --git a/p/q b/p/q\nnew file mode 100644\n--- /dev/null\n+++ b/p/q\n"
            "@@ -0,0 +1 @@\n+x\n"
        )
        with pytest.raises(ToolHandlerError, match='goes through "p", which is not a directory'):
            runtime.dispatch("apply_patch", {"patch": patch})
        assert snapshot(ws) == before

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


NUMBERED = "".join(f"line {n}\n" for n in range(1, 11))
TWICE = "a\nb\nTARGET\nc\nd\n"  # a block found twice, at equal distance from the hunk


def files_of(root: Path) -> dict[str, tuple[bytes, bool]]:
    """Every file below root with its bytes and whether it is executable."""
    return {
        str(path.relative_to(root)): (path.read_bytes(), bool(path.stat().st_mode & 0o100))
        for path in root.rglob("*")
        if path.is_file()
    }


# (name, files before (bytes, executable), patch, files after)
GIT_SHAPES = [
    (
        "rename with changes",
        {"a.txt": (NUMBERED.encode(), False)},
        "diff --git a/a.txt b/b.txt\nsimilarity index 90%\nrename from a.txt\nrename to b.txt\n"
        "--- a/a.txt\n+++ b/b.txt\n@@ -4,3 +4,3 @@ x\n line 4\n-line 5\n+five\n line 6\n",
        {"b.txt": (NUMBERED.replace("line 5", "five").encode(), False)},
    ),
    (
        "pure rename",
        {"a.txt": (b"x\n", True)},
        "diff --git a/a.txt b/d/b.txt\nsimilarity index 100%\nrename from a.txt\n"
        "rename to d/b.txt\n",
        {"d/b.txt": (b"x\n", True)},
    ),
    (
        "copy",
        {"a.txt": (b"x\n", False)},
        "diff --git a/a.txt b/c.txt\nsimilarity index 100%\ncopy from a.txt\ncopy to c.txt\n",
        {"a.txt": (b"x\n", False), "c.txt": (b"x\n", False)},
    ),
    (
        "only empty files",
        {"gone": (b"", False)},
        "diff --git a/gone b/gone\ndeleted file mode 100644\nindex e69de29..0000000\n"
        "diff --git a/pkg/py.typed b/pkg/py.typed\nnew file mode 100644\n"
        "index 0000000..e69de29\n",
        {"pkg/py.typed": (b"", False)},
    ),
    (
        "new executable and a mode change",
        {"tool.sh": (b"#!/bin/sh\n", False)},
        "diff --git a/tool.sh b/tool.sh\nold mode 100644\nnew mode 100755\n"
        "diff --git a/run.sh b/run.sh\nnew file mode 100755\n--- /dev/null\n+++ b/run.sh\n"
        "@@ -0,0 +1 @@\n+#!/bin/sh\n",
        {"tool.sh": (b"#!/bin/sh\n", True), "run.sh": (b"#!/bin/sh\n", True)},
    ),
    (
        "a quoted name with a space, a non-ASCII letter and git's tab",
        {},
        'diff --git "a/d d/\\303\\251.txt" "b/d d/\\303\\251.txt"\nnew file mode 100644\n'
        '--- /dev/null\n+++ "b/d d/\\303\\251.txt"\t\n@@ -0,0 +1 @@\n+x\n',
        {"d d/é.txt": (b"x\n", False)},
    ),
    (
        "names with spaces only on the diff --git line (an empty file, a mode change)",
        {"x y/run it.sh": (b"#!/bin/sh\n", False)},
        "diff --git a/x y/run it.sh b/x y/run it.sh\nold mode 100644\nnew mode 100755\n"
        "diff --git a/x y/a b.txt b/x y/a b.txt\nnew file mode 100644\nindex 0000000..e69de29\n",
        {"x y/run it.sh": (b"#!/bin/sh\n", True), "x y/a b.txt": (b"", False)},
    ),
    (
        "git's mnemonic prefixes (diff.mnemonicPrefix)",
        {"m.txt": (b"a\nb\nc\n", False)},
        "diff --git i/m.txt w/m.txt\n--- i/m.txt\n+++ w/m.txt\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n",
        {"m.txt": (b"a\nB\nc\n", False)},
    ),
    (
        "dos2unix",
        {"w.txt": (b"a\r\nb\r\n", False)},
        "--- a/w.txt\n+++ b/w.txt\n@@ -1,2 +1,2 @@\n-a\r\n-b\r\n+a\n+b\n",
        {"w.txt": (b"a\nb\n", False)},
    ),
    (
        "a CRLF file whose last line has no newline",
        {"w.txt": (b"a\r\nb\r\nc", False)},
        "--- a/w.txt\n+++ b/w.txt\n@@ -2,2 +2,3 @@\n b\n-c\n\\ No newline at end of file\n+c\n+d\n"
        "\\ No newline at end of file\n",
        {"w.txt": (b"a\r\nb\r\nc\r\nd", False)},
    ),
    (
        "context keeps the file's own line endings",
        {"w.txt": (b"a\nb\r\nc\r\n", False)},
        "--- a/w.txt\n+++ b/w.txt\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n",
        {"w.txt": (b"a\nB\r\nc\r\n", False)},
    ),
    (
        "a hunk at line 1 of a file with a BOM, as git prints it",
        {"b.txt": ("\ufeffone\ntwo\n".encode(), False)},
        "--- a/b.txt\n+++ b/b.txt\n@@ -1,2 +1,2 @@\n-\ufeffone\n+\ufeffONE\n two\n",
        {"b.txt": ("\ufeffONE\ntwo\n".encode(), False)},
    ),
    (
        "a hunk at line 1 written without the file's BOM: the BOM is kept",
        {"b.txt": ("\ufeffone\ntwo\n".encode(), False)},
        "--- a/b.txt\n+++ b/b.txt\n@@ -1,2 +1,3 @@\n+zero\n one\n two\n",
        {"b.txt": ("\ufeffzero\none\ntwo\n".encode(), False)},
    ),
    (
        "two equally good places: the lower one, as git and patch choose",
        {"t.txt": ((TWICE + "mid\n" + TWICE).encode(), False)},
        "--- a/t.txt\n+++ b/t.txt\n@@ -4,5 +4,5 @@\n a\n b\n-TARGET\n+CHANGED\n c\n d\n",
        {"t.txt": ((TWICE + "mid\n" + TWICE.replace("TARGET", "CHANGED")).encode(), False)},
    ),
    (
        "deleting a directory's last file removes the directory",
        {"d/e/only.txt": (b"x\n", False), "keep": (b"k\n", False)},
        "--- a/d/e/only.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-x\n",
        {"keep": (b"k\n", False)},
    ),
]

# (name, files before, patch): each applies once; the second time it must be refused.
APPLIED_ONCE = [
    (
        "add the final newline",
        {"n.txt": b"a\nb"},
        "--- a/n.txt\n+++ b/n.txt\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+b\n",
    ),
    (
        "prepend a header (anchored at the start)",
        {"h.py": NUMBERED.encode()},
        "--- a/h.py\n+++ b/h.py\n@@ -1,3 +1,4 @@\n+# header\n line 1\n line 2\n line 3\n",
    ),
    (
        "append at the end (anchored at the end)",
        {"e.txt": NUMBERED.encode()},
        "--- a/e.txt\n+++ b/e.txt\n@@ -8,3 +8,4 @@\n line 8\n line 9\n line 10\n+tail\n",
    ),
    (
        "append with one line of context (-U1)",
        {"e.txt": NUMBERED.encode()},
        "--- a/e.txt\n+++ b/e.txt\n@@ -10 +10,2 @@\n line 10\n+line 11\n",
    ),
    (
        "a short context that is found again further down (-U1)",
        {"r.txt": b"a\nx\ny\nb\nx\ny\n"},
        "--- a/r.txt\n+++ b/r.txt\n@@ -2,2 +2,3 @@\n x\n+z\n y\n",
    ),
    (
        "drop a repeated last line of a file with a BOM (-U0)",
        {"b.txt": "\ufeffa\na\n".encode()},
        "--- a/b.txt\n+++ b/b.txt\n@@ -2 +1,0 @@\n-a\n",
    ),
    (
        "an insertion that starts as the context after it does (-U1)",
        {"l.py": b"[\n(\n1\n)\n(\n2\n)\n]\n"},
        "--- a/l.py\n+++ b/l.py\n@@ -4,2 +4,5 @@\n )\n+(\n+new\n+)\n (\n",
    ),
    (
        "unix2dos",
        {"w.txt": b"a\nb\n"},
        "--- a/w.txt\n+++ b/w.txt\n@@ -1,2 +1,2 @@\n-a\n-b\n+a\r\n+b\r\n",
    ),
]


class TestGitShapes:
    @pytest.mark.parametrize(
        ("before", "patch", "after"),
        [shape[1:] for shape in GIT_SHAPES],
        ids=[shape[0] for shape in GIT_SHAPES],
    )
    def test_applies_what_git_diff_prints(
        self,
        tmp_path: Path,
        before: dict[str, tuple[bytes, bool]],
        patch: str,
        after: dict[str, tuple[bytes, bool]],
    ) -> None:
        """Renames, copies, empty files, modes, quoted names, line endings, BOMs, equal
        matches and emptied directories come out as git apply leaves them."""
        root = tmp_path / "ws"
        root.mkdir()
        for name, (data, executable) in before.items():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_bytes(data)
            (root / name).chmod(0o755 if executable else 0o644)
        registry = ToolRegistry()
        register_coding_tools(registry, root, sandbox=False)
        ToolRuntime(registry).dispatch("apply_patch", {"patch": patch})
        assert files_of(root) == after
        assert sorted(p.name for p in root.rglob("*") if p.is_dir()) == sorted(
            {part for name in after for part in Path(name).parent.parts}
        )

    @pytest.mark.parametrize(
        ("before", "patch"),
        [case[1:] for case in APPLIED_ONCE],
        ids=[case[0] for case in APPLIED_ONCE],
    )
    def test_a_second_application_is_refused(
        self, tmp_path: Path, before: dict[str, bytes], patch: str
    ) -> None:
        """A patch applies once; applied again it is refused and changes nothing."""
        root = tmp_path / "ws"
        root.mkdir()
        for name, data in before.items():
            (root / name).write_bytes(data)
        registry = ToolRegistry()
        register_coding_tools(registry, root, sandbox=False)
        runtime = ToolRuntime(registry)
        runtime.dispatch("apply_patch", {"patch": patch})
        once = snapshot(root)
        with pytest.raises(ToolHandlerError, match="does not apply"):
            runtime.dispatch("apply_patch", {"patch": patch})
        assert snapshot(root) == once
