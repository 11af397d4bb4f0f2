"""Built-in tools and the default registry."""

from __future__ import annotations

from mini_harness.runtime import ToolRegistry
from mini_harness.tools.definitions import LIST_FILES, READ_FILE, SEARCH_TEXT, SKIPPED_DIRS
from mini_harness.tools.echo import ECHO, echo
from mini_harness.tools.list_files import ListFiles
from mini_harness.tools.read_file import ReadFile
from mini_harness.tools.search_text import SearchText
from mini_harness.tools.workspace import Workspace, WorkspaceLike


def register_workspace_tools(registry: ToolRegistry, workspace: WorkspaceLike) -> None:
    """Add the tools that work on files (list_files, read_file, search_text), confined to
    `workspace`; the root is resolved and checked once, here."""
    bound = workspace if isinstance(workspace, Workspace) else Workspace(workspace)
    registry.register(LIST_FILES, ListFiles(bound))
    registry.register(READ_FILE, ReadFile(bound))
    registry.register(SEARCH_TEXT, SearchText(bound))


def default_registry(workspace: WorkspaceLike | None = None) -> ToolRegistry:
    """A fresh registry holding echo and the file tools (workspace: default the cwd, as it
    is when the registry is made)."""
    registry = ToolRegistry()
    registry.register(ECHO, echo)
    register_workspace_tools(registry, Workspace.current() if workspace is None else workspace)
    return registry


__all__ = [
    "SKIPPED_DIRS",
    "Workspace",
    "WorkspaceLike",
    "default_registry",
    "register_workspace_tools",
]
