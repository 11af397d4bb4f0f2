"""`list_files`: the files below a workspace directory, sorted, with sizes, bounded."""

from __future__ import annotations

from typing import Any, Final

import attrs

from mini_harness.runtime import ToolAnnotations, ToolDefinition
from mini_harness.runtime.jsonvalue import JsonObject
from mini_harness.tools.globs import PathGlob
from mini_harness.tools.walk import SKIPPED_DIRS, walk_files
from mini_harness.tools.workspace import Workspace

PATH_MAX: Final = 4096  # Linux's PATH_MAX: a longer path cannot name a file anyway
DEFAULT_MAX_RESULTS: Final = 1000
MAX_RESULTS_LIMIT: Final = 10_000

GLOB_DESCRIPTION: Final = (
    "Only files matching this glob. Without a '/' it matches file names ('*.py', "
    "'test_*.{py,txt}'); with one it matches the path relative to `path` "
    "('src/**/*.py'). '*' and '?' stay within one directory, '**' spans directories, "
    "'[abc]' is a character class, '{a,b}' are alternatives."
)
PATH_DESCRIPTION: Final = (
    "Directory relative to the workspace root, e.g. 'src' or 'src/pkg'. Default '.' "
    "(the root). Absolute paths and '..' leading outside the workspace are refused."
)

LIST_FILES = ToolDefinition(
    name="list_files",
    description=(
        "List the files below a directory of the workspace, sorted by path, each with its "
        "size in bytes. Skips " + ", ".join(sorted(SKIPPED_DIRS)) + ", whatever the "
        "workspace's .gitignore ignores, special files, and symlinks leading outside the "
        "workspace. Returned paths are relative to the workspace root and can be passed "
        "to read_file. Use glob to filter and maxDepth to stay shallow; at most maxResults "
        "files are returned and `truncated` says whether more exist."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "path": {"type": "string", "maxLength": PATH_MAX, "description": PATH_DESCRIPTION},
            "glob": {"type": "string", "minLength": 1, "description": GLOB_DESCRIPTION},
            "maxDepth": {
                "type": "integer",
                "minimum": 1,
                "description": (
                    "How many directory levels to descend: 1 lists only the files directly "
                    "in `path`, 2 also those one directory down. Directories left closed "
                    "are named in `deeperDirs`. Default: no limit."
                ),
            },
            "maxResults": {
                "type": "integer",
                "minimum": 1,
                "maximum": MAX_RESULTS_LIMIT,
                "description": (
                    f"Return at most this many files (default {DEFAULT_MAX_RESULTS}); "
                    "`truncated` is true when more matched."
                ),
            },
        },
        "additionalProperties": False,
    },
    annotations=ToolAnnotations(title="List files", read_only_hint=True, open_world_hint=False),
)


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
