"""`apply_patch`: a unified diff applied to the workspace, all or nothing.

Every file of the patch is checked and its new content computed from the files as they
are before anything is written (`patch_hunks` places the hunks as git does); then
`patch_writes` writes them through directory descriptors, or puts everything back. A
conflict changes nothing and says which file and hunk failed, with the file's lines there.
"""

from __future__ import annotations

import os
import posixpath
import stat
from typing import Any, Final

import attrs

from mini_harness.errors import PatchConflictError, PatchSyntaxError, WorkspaceError
from mini_harness.events import JsonObject
from mini_harness.runtime.results import FileEffect, WithEffects, sha256_of
from mini_harness.tools.controls import control_by_another_name
from mini_harness.tools.patch_files import FileWrite, Found, PatchTree
from mini_harness.tools.patch_hunks import BOM, apply_hunks
from mini_harness.tools.patch_writes import commit
from mini_harness.tools.read_file import decode_text
from mini_harness.tools.unified_diff import EXECUTABLE, FilePatch, parse_patch
from mini_harness.tools.workspace import Workspace, decodable_path, quote_path

MAX_FILE_BYTES: Final = 8 << 20


@attrs.frozen
class PlannedFile:
    """What one file patch will do: its writes (two for a rename) and how it is reported."""

    patch: FilePatch
    action: str  # added, modified, deleted, renamed, copied
    path: str
    source: str | None  # the old path of a rename or copy
    writes: tuple[FileWrite, ...]

    def to_json(self) -> JsonObject:
        shown: JsonObject = {"path": self.path, "action": self.action}
        if self.source is not None:
            shown["from"] = self.source
        shown["hunks"] = len(self.patch.hunks)
        return shown


def _with_mode(perms: int, mode: int | None) -> int:
    """Permission bits `perms` made executable (where readable) or not, as git's mode says."""
    if mode is None:
        return perms
    if mode == EXECUTABLE:
        return perms | (perms & 0o444) >> 2
    return perms & ~0o111


@attrs.frozen
class ApplyPatch:
    """The apply_patch handler, bound to one workspace. `sync`: each written file and its
    directory are synced to disk before the call returns."""

    workspace: Workspace
    sync: bool = True

    def __call__(self, tool_input: dict[str, Any]) -> WithEffects:
        try:
            patches = parse_patch(tool_input["patch"])
        except PatchSyntaxError as exc:
            raise WorkspaceError(".", f"Not a patch apply_patch can use: {exc.message}") from None
        with PatchTree(self.workspace) as tree:
            planned = self.plan(tree, patches)
            writes = [write for item in planned for write in item.writes]
            commit(tree, writes, sync=self.sync)
            for write in writes:
                if write.new is None:
                    tree.remove_empty_directories(write.path)
        effects = tuple(
            FileEffect(
                write.path,
                sha256_of(None if write.found is None else write.found.data),
                sha256_of(write.new),
            )
            for write in writes
        )
        output = {"applied": True, "files": [item.to_json() for item in planned]}
        return WithEffects(output=output, effects=effects)

    def plan(
        self,
        tree: PatchTree,
        patches: tuple[FilePatch, ...],
        placed: list[list[int]] | None = None,
    ) -> list[PlannedFile]:
        """What each file patch would write, computed from the files as they are now;
        raises WorkspaceError or PatchConflictError when the patch cannot be applied.
        With `placed`, where each file's hunks went (see apply_hunks) is appended to it."""
        planned = []
        for patch in patches:
            positions: list[int] | None = None if placed is None else []
            planned.append(self._plan_file(tree, patch, positions))
            if placed is not None and positions is not None:
                placed.append(positions)
        seen: set[str] = set()
        for item in planned:
            for write in item.writes:
                if write.path in seen:
                    raise WorkspaceError(
                        write.path,
                        f"Not a patch apply_patch can use: file {quote_path(write.path)} "
                        "appears twice in the patch",
                    )
                seen.add(write.path)
        return planned

    # --- checking -------------------------------------------------------------

    def checked_path(self, path: str) -> str:
        """`path` normalised, when apply_patch may change what it names: relative, inside
        the workspace, a name it can record, none of the agent's controls."""
        shown = quote_path(path)
        if "\0" in path:
            raise WorkspaceError(path, f"Path {shown} contains a NUL byte")
        if not decodable_path(path):
            raise WorkspaceError(
                path,
                f"Path {shown} is not valid UTF-8; apply_patch changes only files whose "
                "names it can record",
            )
        if posixpath.isabs(path):
            raise WorkspaceError(
                path, f"Path {shown} is absolute; use a path relative to the workspace root"
            )
        normal = posixpath.normpath(path)
        if normal == ".":
            raise WorkspaceError(path, f"Path {shown} is the workspace root, not a file")
        if normal == ".." or normal.startswith("../"):
            raise WorkspaceError(path, f"Path {shown} leads outside the workspace")
        if self.workspace.protects(os.path.join(self.workspace.root, normal)):
            raise WorkspaceError(
                path,
                f"Path {shown} is one of the agent's own controls (.git, .mini-harness, the "
                "open transcript); apply_patch does not change it",
            )
        return normal

    def _read(self, tree: PatchTree, path: str) -> tuple[Found | None, str]:
        """The file at `path` (None: absent) and its text, with a BOM it starts with."""
        found = tree.read(path, MAX_FILE_BYTES)
        if found is None:
            return None, ""
        reached = control_by_another_name(self.workspace, found.info)
        if reached is not None:
            raise WorkspaceError(
                path,
                f"Path {quote_path(path)} is {reached}; apply_patch does not change it",
            )
        text = decode_text(found.data)
        if text is None:
            raise WorkspaceError(
                path, f"File {quote_path(path)} is binary; apply_patch changes text only"
            )
        return found, BOM + text if found.data.startswith(BOM.encode()) else text

    def _plan_file(
        self, tree: PatchTree, patch: FilePatch, placed: list[int] | None = None
    ) -> PlannedFile:
        old = None if patch.old_path is None else self.checked_path(patch.old_path)
        if patch.new_path == patch.old_path:
            new = old  # the same name, checked once
        else:
            new = None if patch.new_path is None else self.checked_path(patch.new_path)
        source, text = (None, "") if old is None else self._read(tree, old)
        if old is not None and source is None:
            raise PatchConflictError(
                old,
                f"The patch changes {quote_path(old)}, but it does not exist. Nothing was changed.",
            )
        if new is not None and new != old and self._read(tree, new)[0] is not None:
            raise PatchConflictError(
                new,
                f"The patch adds {quote_path(new)}, but it exists already. Nothing was changed.",
            )
        shown = new or old or ""
        result = apply_hunks(shown, text, patch, placed)
        if new is None:
            if result:
                raise PatchConflictError(
                    shown,
                    f"The patch deletes {quote_path(shown)}, but lines the patch does not "
                    "list would remain. Nothing was changed.",
                )
            assert old is not None
            return PlannedFile(patch, "deleted", old, None, (FileWrite(old, source, None),))
        content = result.encode("utf-8")
        if source is None:
            mode = 0o777 if patch.new_mode == EXECUTABLE else None  # less the umask
            return PlannedFile(patch, "added", new, None, (FileWrite(new, None, content, mode),))
        assert old is not None
        perms = stat.S_IMODE(source.info.st_mode)
        self._check_old_mode(old, perms, patch)
        mode = _with_mode(perms, patch.new_mode)
        if new == old:
            if not patch.hunks and mode == perms:
                raise PatchConflictError(
                    new, f"The patch does not change {quote_path(new)}. Nothing was changed."
                )
            return PlannedFile(
                patch, "modified", new, None, (FileWrite(new, source, content, mode),)
            )
        added = FileWrite(new, None, content, mode)
        if patch.copy:
            return PlannedFile(patch, "copied", new, old, (added,))
        return PlannedFile(patch, "renamed", new, old, (FileWrite(old, source, None), added))

    @staticmethod
    def _check_old_mode(path: str, perms: int, patch: FilePatch) -> None:
        if patch.old_mode is None or patch.new_mode is None or patch.old_mode == patch.new_mode:
            return
        is_executable = bool(perms & 0o111)
        if is_executable != (patch.old_mode == EXECUTABLE):
            state = "is executable" if is_executable else "is not executable"
            raise PatchConflictError(
                path,
                f"The patch changes the mode of {quote_path(path)} from {patch.old_mode:o} to "
                f"{patch.new_mode:o}, but the file {state} already. Nothing was changed.",
            )
