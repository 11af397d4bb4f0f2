"""`list_files`: the files below a workspace directory, sorted, with sizes, bounded."""

from __future__ import annotations

from typing import Any

import attrs

from mini_harness.events import JsonObject
from mini_harness.tools.definitions import LIST_DEFAULT_MAX_RESULTS as DEFAULT_MAX_RESULTS
from mini_harness.tools.globs import PathGlob
from mini_harness.tools.walk import walk_files
from mini_harness.tools.workspace import Workspace


@attrs.define
class UndecodableCount:
    """How many entries a walk skipped because their names are not UTF-8."""

    skipped: int = 0

    def add(self) -> None:
        self.skipped += 1

    def report(self, output: JsonObject) -> JsonObject:
        """`output` with `skippedUndecodable` added, only when something was skipped.

        Left out otherwise, so the outputs of ordinary workspaces stay as they were
        (transcripts recorded before keep matching on re-run).
        """
        if self.skipped:
            output["skippedUndecodable"] = self.skipped
        return output


@attrs.frozen
class ListFiles:
    """The list_files handler, bound to one workspace."""

    workspace: Workspace

    def __call__(self, tool_input: dict[str, Any]) -> JsonObject:
        top = self.workspace.locate_dir(tool_input.get("path", "."))
        glob = tool_input.get("glob")
        matcher = PathGlob(glob) if glob is not None else None
        limit = tool_input.get("maxResults", DEFAULT_MAX_RESULTS)
        deeper: list[str] = []
        undecodable = UndecodableCount()
        files: list[JsonObject] = []
        truncated = False
        for entry in walk_files(
            self.workspace,
            top,
            max_depth=tool_input.get("maxDepth"),
            on_deeper_dir=deeper.append,
            on_undecodable=undecodable.add,
        ):
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
            "deeperDirs": deeper,
        }
        return undecodable.report(output)
