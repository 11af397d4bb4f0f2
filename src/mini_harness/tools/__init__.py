"""Built-in tools and the default registry."""

from __future__ import annotations

import importlib
import os
from typing import Any

from mini_harness.runtime import ToolRegistry
from mini_harness.runtime.jsonvalue import JsonObject
from mini_harness.tools.definitions import LIST_FILES, READ_FILE, SEARCH_TEXT, SKIPPED_DIRS
from mini_harness.tools.echo import ECHO, echo
from mini_harness.tools.workspace import Workspace

WorkspaceLike = Workspace | str | os.PathLike[str]


class _Deferred:
    """A file tool's handler, imported and bound on its first call.

    A registry describes every tool, but a run (a CLI dispatch of echo, say) calls few:
    the walk and the glob matcher behind the file tools load only when one is called.
    """

    def __init__(self, module: str, cls: str, workspace: Workspace) -> None:
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
            handler = self._handler = getattr(module, self._cls)(self._workspace)
        result: JsonObject = handler(tool_input)
        return result


def register_workspace_tools(registry: ToolRegistry, workspace: WorkspaceLike) -> None:
    """Add list_files, read_file and search_text, confined to `workspace`."""
    bound = workspace if isinstance(workspace, Workspace) else Workspace(workspace)
    registry.register(LIST_FILES, _Deferred("list_files", "ListFiles", bound))
    registry.register(READ_FILE, _Deferred("read_file", "ReadFile", bound))
    registry.register(SEARCH_TEXT, _Deferred("search_text", "SearchText", bound))


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
