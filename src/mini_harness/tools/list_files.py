"""`list_files`: the files below a workspace directory, sorted, with sizes, bounded."""

from __future__ import annotations

from typing import Any

import attrs

from mini_harness.events import JsonObject
from mini_harness.tools.definitions import LIST_DEFAULT_MAX_RESULTS as DEFAULT_MAX_RESULTS
from mini_harness.tools.globs import PathGlob
from mini_harness.tools.walk import WalkSkips, walk_files
from mini_harness.tools.workspace import Workspace


@attrs.frozen
class ListFiles:
    """The list_files handler, bound to one workspace."""

    workspace: Workspace

    def __call__(self, tool_input: dict[str, Any]) -> JsonObject:
        top = self.workspace.locate_dir(tool_input.get("path", "."))
        glob = tool_input.get("glob")
        matcher = PathGlob(glob) if glob is not None else None
        limit = tool_input.get("maxResults", DEFAULT_MAX_RESULTS)
        skips = WalkSkips()
        files: list[JsonObject] = []
        truncated = False
        for entry in walk_files(self.workspace, top, skips, max_depth=tool_input.get("maxDepth")):
            if matcher is not None and not matcher.matches(entry.below):
                continue
            if len(files) == limit:
                truncated = True
                break
            files.append({"path": entry.path, "size": entry.size})
        output: JsonObject = {
            "path": top.relative,
            "files": files,
            "count": len(files),
            "truncated": truncated,
            "deeperDirs": skips.deeper_dirs,
        }
        return skips.report(output)
