"""File names that are not UTF-8: skipped and counted by walks, refused by read_file."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from mini_harness import InvalidInputError, MemorySink, ToolHandlerError, ToolRuntime
from mini_harness.errors import WorkspaceError
from mini_harness.tools import Workspace, default_registry
from mini_harness.tools.read_file import ReadFile


@pytest.fixture(name="latin1_root")
def _latin1_root(tmp_path: Path) -> Path:
    """A workspace with a Latin-1 file name and a directory whose name is not UTF-8."""
    root = tmp_path / "ws"
    root.mkdir()
    base = os.fsencode(root)
    (root / "good.txt").write_text("needle\n")
    try:
        with open(base + b"/caf\xe9.txt", "wb") as latin1:
            latin1.write(b"needle\n")
        os.mkdir(base + b"/d\xff")
    except (OSError, UnicodeError) as exc:
        pytest.skip(f"this filesystem refuses names that are not UTF-8: {exc}")
    with open(base + b"/d\xff/inner.txt", "wb") as inner:
        inner.write(b"needle\n")
    (root / "sub").mkdir()
    (root / "sub/ok.txt").write_text("needle\n")
    return root


def dispatch(root: Path, tool: str, **tool_input: Any) -> dict[str, Any]:
    output = ToolRuntime(default_registry(root), MemorySink()).dispatch(tool, tool_input).output
    assert isinstance(output, dict)
    return output


class TestListFiles:
    def test_undecodable_names_are_skipped_and_counted(self, latin1_root: Path) -> None:
        """The other files are listed; the file and the directory are counted, not listed."""
        assert dispatch(latin1_root, "list_files") == {
            "path": ".",
            "files": [{"path": "good.txt", "size": 7}, {"path": "sub/ok.txt", "size": 7}],
            "count": 2,
            "truncated": False,
            "deeperDirs": [],
            "skippedUndecodable": 2,
        }

    def test_count_is_absent_when_nothing_was_skipped(self, latin1_root: Path) -> None:
        """A directory without such names gives the usual output, with no extra key."""
        assert dispatch(latin1_root, "list_files", path="sub") == {
            "path": "sub",
            "files": [{"path": "sub/ok.txt", "size": 7}],
            "count": 1,
            "truncated": False,
            "deeperDirs": [],
        }


class TestSearchText:
    def test_undecodable_names_are_skipped_and_counted(self, latin1_root: Path) -> None:
        """The search still runs over the other files and says how many names it skipped."""
        assert dispatch(latin1_root, "search_text", query="needle") == {
            "matches": [
                {"path": "good.txt", "line": 1, "text": "needle"},
                {"path": "sub/ok.txt", "line": 1, "text": "needle"},
            ],
            "count": 2,
            "truncated": False,
            "filesSearched": 2,
            "filesSkipped": 0,
            "skippedUndecodable": 2,
        }


class TestReadFile:
    def test_handler_refuses_a_surrogate_path(self, latin1_root: Path) -> None:
        """A path holding the name's surrogate escape is refused with a readable message."""
        handler = ReadFile(Workspace(latin1_root))
        with pytest.raises(WorkspaceError) as caught:
            handler({"path": "caf\udce9.txt"})
        assert caught.value.message == (
            'Path "caf\\udce9.txt" is not valid Unicode; only UTF-8 file names can be read'
        )

    def test_dispatch_refuses_a_surrogate_path_as_input(self, latin1_root: Path) -> None:
        """Through the runtime such a path is not even JSON, so it fails as invalid input."""
        runtime = ToolRuntime(default_registry(latin1_root), MemorySink())
        with pytest.raises(InvalidInputError):
            runtime.dispatch("read_file", {"path": "caf\udce9.txt"})

    def test_decoded_spelling_does_not_exist(self, latin1_root: Path) -> None:
        """ "café.txt" in UTF-8 is another name: reported missing, not read by accident."""
        runtime = ToolRuntime(default_registry(latin1_root), MemorySink())
        with pytest.raises(ToolHandlerError) as caught:
            runtime.dispatch("read_file", {"path": "café.txt"})
        assert caught.value.message == (
            'Tool read_file failed: WorkspaceError: Path "café.txt" does not exist'
        )
