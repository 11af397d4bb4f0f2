"""Built-in tools and the default registry.

A registry holds every built-in tool's definition from the start (`mini-harness tools`
lists them, RunStarted records them), but a tool's module (the walker and its globs, the
patch engine, git, the sandbox) is imported only when the tool is first called: a
command that never calls a tool never loads it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from mini_harness.errors import WorkspaceError
from mini_harness.runtime import ToolRegistry
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
from mini_harness.tools.workspace import Workspace, WorkspaceLike

if TYPE_CHECKING:
    from mini_harness.tools.sandbox import Bubblewrap

Handler = Callable[[Any], Any]


class OnFirstCall:
    """A built-in tool's handler, made by `make(*args)` when the tool is first called
    (`make` imports the tool's module). Calls after that go straight to the handler."""

    __slots__ = ("_args", "_handler", "_lock", "_make")

    def __init__(self, make: Callable[..., Handler], *args: Any) -> None:
        self._make = make
        self._args = args
        self._handler: Handler | None = None
        self._lock = threading.Lock()

    def __call__(self, tool_input: Any) -> Any:
        handler = self._handler
        if handler is None:
            with self._lock:  # two threads' first calls make one handler
                if self._handler is None:
                    self._handler = self._make(*self._args)
                handler = self._handler
        return handler(tool_input)

    def __repr__(self) -> str:
        if self._handler is not None:
            return repr(self._handler)
        args = ", ".join(repr(arg) for arg in self._args)
        return f"<{self._make.__name__}({args}), made on first call>"


def _list_files(workspace: Workspace) -> Handler:
    from mini_harness.tools.list_files import ListFiles

    return ListFiles(workspace)


def _read_file(workspace: Workspace) -> Handler:
    from mini_harness.tools.read_file import ReadFile

    return ReadFile(workspace)


def _search_text(workspace: Workspace) -> Handler:
    from mini_harness.tools.search_text import SearchText

    return SearchText(workspace)


def _git_status(workspace: Workspace, bwrap: Bubblewrap | None) -> Handler:
    from mini_harness.tools.git_tools import Git

    return Git(workspace, bwrap).status


def _git_diff(workspace: Workspace, bwrap: Bubblewrap | None) -> Handler:
    from mini_harness.tools.git_tools import Git

    return Git(workspace, bwrap).diff


def _apply_patch(workspace: Workspace) -> Handler:
    from mini_harness.tools.apply_patch import ApplyPatch

    return ApplyPatch(workspace)


def _run_command(
    workspace: Workspace, bwrap: Bubblewrap | None, redacted_names: tuple[str, ...]
) -> Handler:
    from mini_harness.tools.run_command import RunCommand

    return RunCommand(workspace, bwrap, redacted_names)


def register_workspace_tools(registry: ToolRegistry, workspace: WorkspaceLike) -> None:
    """Add the tools that work on files (list_files, read_file, search_text), confined to
    `workspace`; the root is resolved and checked once, here."""
    bound = workspace if isinstance(workspace, Workspace) else Workspace(workspace)
    registry.register(LIST_FILES, OnFirstCall(_list_files, bound))
    registry.register(READ_FILE, OnFirstCall(_read_file, bound))
    registry.register(SEARCH_TEXT, OnFirstCall(_search_text, bound))


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
    # Whether bubblewrap works decides run_command's definition, so it is found out here.
    from mini_harness.tools.sandbox import NO_SANDBOX_MESSAGE, bubblewrap

    bound = workspace if isinstance(workspace, Workspace) else Workspace(workspace)
    bwrap = bubblewrap() if sandbox is not False else None
    if sandbox and bwrap is None:
        raise WorkspaceError(".", NO_SANDBOX_MESSAGE)
    registry.register(GIT_STATUS, OnFirstCall(_git_status, bound, bwrap))
    registry.register(GIT_DIFF, OnFirstCall(_git_diff, bound, bwrap))
    registry.register(APPLY_PATCH, OnFirstCall(_apply_patch, bound))
    registry.register(
        run_command_definition(sandboxed=bwrap is not None),
        OnFirstCall(_run_command, bound, bwrap, redacted_names),
    )


__all__ = [
    "SKIPPED_DIRS",
    "OnFirstCall",
    "Workspace",
    "WorkspaceLike",
    "default_registry",
    "register_coding_tools",
    "register_workspace_tools",
]
