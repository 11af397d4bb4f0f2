"""Built-in tools and the default registry."""

from __future__ import annotations

import importlib
import os
from typing import TYPE_CHECKING, Any

from mini_harness._lazy import lazy_exports
from mini_harness.errors import WorkspaceError
from mini_harness.events import JsonObject
from mini_harness.runtime import ToolRegistry
from mini_harness.tools.definitions import LIST_FILES, READ_FILE, SEARCH_TEXT, SKIPPED_DIRS
from mini_harness.tools.echo import ECHO, echo

if TYPE_CHECKING:
    from mini_harness.tools.workspace import Workspace, WorkspaceLike


class _CurrentDirectory:
    """The workspace of a registry made without one: the current directory at that time.

    The directory is resolved and checked when the registry is made, as Workspace.current()
    does; the Workspace object itself is built when a file tool first runs, so that a run
    that calls none (a CLI dispatch of echo) never loads the workspace module and pathlib.
    """

    def __init__(self) -> None:
        try:
            cwd = os.getcwd()
        except OSError as exc:  # the cwd was deleted under us
            raise WorkspaceError(".", f"The current directory cannot be used: {exc}") from None
        self._real = os.path.realpath(cwd)
        self._workspace: Workspace | None = None
        if not os.path.isdir(self._real):  # rare: let Workspace say what is wrong
            from mini_harness.tools.workspace import Workspace

            self._workspace = Workspace(cwd)

    def __repr__(self) -> str:
        return repr(self.get())

    def get(self) -> Workspace:
        if self._workspace is None:
            from mini_harness.tools.workspace import Workspace

            self._workspace = Workspace.from_resolved(self._real)
        return self._workspace


class _Deferred:
    """A file tool's handler, imported and bound on its first call.

    A registry describes every tool, but a run (a CLI dispatch of echo, say) calls few:
    the walk and the glob matcher behind the file tools load only when one is called.
    """

    def __init__(self, module: str, cls: str, workspace: Workspace | _CurrentDirectory) -> None:
        self._module = module
        self._cls = cls
        self._workspace = workspace
        self._handler: Any = None

    def __repr__(self) -> str:
        return f"<{self._cls} handler of {self._workspace!r} (deferred)>"

    def __call__(self, tool_input: dict[str, Any]) -> JsonObject:
        handler = self._handler
        if handler is None:  # two threads may both get here: each builds the same handler
            module = importlib.import_module(f"mini_harness.tools.{self._module}")
            workspace = self._workspace
            if isinstance(workspace, _CurrentDirectory):
                workspace = workspace.get()
            handler = self._handler = getattr(module, self._cls)(workspace)
        result: JsonObject = handler(tool_input)
        return result


def register_workspace_tools(registry: ToolRegistry, workspace: WorkspaceLike) -> None:
    """Add list_files, read_file and search_text, confined to `workspace`."""
    from mini_harness.tools.workspace import Workspace

    bound = workspace if isinstance(workspace, Workspace) else Workspace(workspace)
    _register_file_tools(registry, bound)


def _register_file_tools(registry: ToolRegistry, bound: Workspace | _CurrentDirectory) -> None:
    registry.register(LIST_FILES, _Deferred("list_files", "ListFiles", bound))
    registry.register(READ_FILE, _Deferred("read_file", "ReadFile", bound))
    registry.register(SEARCH_TEXT, _Deferred("search_text", "SearchText", bound))


def default_registry(workspace: WorkspaceLike | None = None) -> ToolRegistry:
    """A fresh registry holding echo and the file tools (workspace: default the cwd)."""
    registry = ToolRegistry()
    registry.register(ECHO, echo)
    if workspace is None:
        _register_file_tools(registry, _CurrentDirectory())
    else:
        register_workspace_tools(registry, workspace)
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
    commands under bubblewrap when it works here, False never; True requires it.
    `redacted_names`: environment variables never passed to a command.
    """
    from mini_harness.tools.apply_patch import ApplyPatch
    from mini_harness.tools.coding_definitions import (
        APPLY_PATCH,
        GIT_DIFF,
        GIT_STATUS,
        run_command_definition,
    )
    from mini_harness.tools.git_tools import GitDiff, GitRunner, GitStatus
    from mini_harness.tools.run_command import RunCommand, bubblewrap
    from mini_harness.tools.workspace import Workspace

    bound = workspace if isinstance(workspace, Workspace) else Workspace(workspace)
    bwrap = bubblewrap() if sandbox is not False else None
    if sandbox and bwrap is None:
        raise WorkspaceError(
            ".", "A sandbox was required, but bubblewrap (Debian package bubblewrap) cannot run"
        )
    runner = GitRunner(bound)
    registry.register(GIT_STATUS, GitStatus(runner))
    registry.register(GIT_DIFF, GitDiff(runner))
    registry.register(APPLY_PATCH, ApplyPatch(bound))
    registry.register(
        run_command_definition(sandboxed=bwrap is not None),
        RunCommand(bound, bwrap, redacted_names),
    )


__all__ = [
    "SKIPPED_DIRS",
    "Workspace",
    "default_registry",
    "register_coding_tools",
    "register_workspace_tools",
]


__getattr__, __dir__ = lazy_exports(
    __name__, {"Workspace": "workspace", "WorkspaceLike": "workspace"}, globals()
)
