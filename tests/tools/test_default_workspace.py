"""A registry made without a workspace uses the current directory of when it was made."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mini_harness import ToolRuntime
from mini_harness.errors import ToolCallError, WorkspaceError
from mini_harness.tools import Workspace, default_registry


def test_the_directory_is_the_one_current_when_the_registry_was_made(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    second.mkdir()
    (first / "note.txt").write_text("from the first\n")
    (second / "note.txt").write_text("from the second\n")
    monkeypatch.chdir(first)
    runtime = ToolRuntime(default_registry())
    monkeypatch.chdir(second)  # after the registry was made: no effect on it
    result = runtime.dispatch("read_file", {"path": "note.txt"})
    assert "from the first" in str(result.output)


def test_a_deleted_current_directory_is_refused_when_the_registry_is_made(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gone = tmp_path / "gone"
    gone.mkdir()
    monkeypatch.chdir(gone)
    gone.rmdir()
    with pytest.raises(WorkspaceError, match="The current directory cannot be used") as caught:
        default_registry()
    assert caught.value.path == "."
    monkeypatch.chdir(tmp_path)


def test_workspace_is_still_exported() -> None:
    assert Workspace(os.getcwd()).root == Path(os.getcwd()).resolve()


def test_the_root_is_resolved_when_the_registry_is_made(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Swapping the directory for a symlink afterwards does not move the confinement."""
    home, elsewhere = tmp_path / "home", tmp_path / "elsewhere"
    home.mkdir()
    elsewhere.mkdir()
    (elsewhere / "f.txt").write_text("not yours\n")
    monkeypatch.chdir(home)
    runtime = ToolRuntime(default_registry())
    monkeypatch.chdir(tmp_path)
    home.rename(tmp_path / "home-old")
    home.symlink_to(elsewhere)
    with pytest.raises(ToolCallError):
        runtime.dispatch("read_file", {"path": "f.txt"})


def test_the_handlers_repr_names_the_workspace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    handler = default_registry().get("read_file").handler  # type: ignore[union-attr]
    assert repr(Workspace(tmp_path)) in repr(handler)
