"""Built-in tools and the default registry."""

from __future__ import annotations

import os

from mini_harness.runtime import ToolRegistry
from mini_harness.tools.echo import ECHO, echo
from mini_harness.tools.list_files import LIST_FILES, ListFiles
from mini_harness.tools.read_file import READ_FILE, ReadFile
from mini_harness.tools.search_text import SEARCH_TEXT, SearchText
from mini_harness.tools.walk import SKIPPED_DIRS
from mini_harness.tools.workspace import Workspace

WorkspaceLike = Workspace | str | os.PathLike[str]


def register_workspace_tools(registry: ToolRegistry, workspace: WorkspaceLike) -> None:
    """Add list_files, read_file and search_text, confined to `workspace`."""
    bound = workspace if isinstance(workspace, Workspace) else Workspace(workspace)
    registry.register(LIST_FILES, ListFiles(bound))
    registry.register(READ_FILE, ReadFile(bound))
    registry.register(SEARCH_TEXT, SearchText(bound))


def default_registry(workspace: WorkspaceLike | None = None) -> ToolRegistry:
    """A fresh registry holding echo and the file tools (workspace: default the cwd)."""
    registry = ToolRegistry()
    registry.register(ECHO, echo)
    register_workspace_tools(registry, workspace if workspace is not None else Workspace.current())
    return registry


__all__ = [
    "SKIPPED_DIRS",
    "Workspace",
    "default_registry",
    "register_workspace_tools",
]
