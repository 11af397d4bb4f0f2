"""Built-in tools and the default registry."""

from __future__ import annotations

from mini_harness.errors import WorkspaceError
from mini_harness.runtime import ToolRegistry
from mini_harness.tools.apply_patch import ApplyPatch
from mini_harness.tools.definitions import (
    APPLY_PATCH,
    GIT_DIFF,
    GIT_STATUS,
    LIST_FILES,
    READ_FILE,
    SEARCH_TEXT,
    SKIPPED_DIRS,
    run_command_definition,
)
from mini_harness.tools.echo import ECHO, echo
from mini_harness.tools.git_tools import Git
from mini_harness.tools.list_files import ListFiles
from mini_harness.tools.read_file import ReadFile
from mini_harness.tools.run_command import RunCommand
from mini_harness.tools.sandbox import NO_SANDBOX_MESSAGE, bubblewrap
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


# --- coding tools (git, apply_patch, run_command) -----------------------------------


def register_coding_tools(
    registry: ToolRegistry,
    workspace: WorkspaceLike,
    *,
    redacted_names: tuple[str, ...] = (),
    sandbox: bool | None = None,
) -> None:
    """Add git_status, git_diff, apply_patch and run_command, confined to `workspace`.

    Not part of default_registry: apply_patch and run_command change the workspace, so a
    run that offers them should put an approver on its ToolRuntime. `sandbox`: None runs
    commands and git under bubblewrap when it works here, False never; True requires it.
    `redacted_names`: environment variables never passed to a command, even allow-listed
    ones. A Workspace with `protected` files (the open transcript) keeps them read-only for
    commands and refused by apply_patch.
    """
    bound = workspace if isinstance(workspace, Workspace) else Workspace(workspace)
    bwrap = bubblewrap() if sandbox is not False else None
    if sandbox and bwrap is None:
        raise WorkspaceError(".", NO_SANDBOX_MESSAGE)
    git = Git(bound, bwrap)
    registry.register(GIT_STATUS, git.status)
    registry.register(GIT_DIFF, git.diff)
    registry.register(APPLY_PATCH, ApplyPatch(bound))
    registry.register(
        run_command_definition(sandboxed=bwrap is not None),
        RunCommand(bound, bwrap, redacted_names),
    )


__all__ = [
    "SKIPPED_DIRS",
    "Workspace",
    "WorkspaceLike",
    "default_registry",
    "register_coding_tools",
    "register_workspace_tools",
]
