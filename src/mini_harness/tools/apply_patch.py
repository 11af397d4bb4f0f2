"""`apply_patch`: a unified diff applied to the workspace, all or nothing.

Every hunk of every file is checked against the files as they are before anything is
written; the files are reached and written through directory descriptors
(`patch_files`). A conflict changes nothing and says which file and hunk failed, with
the file's current lines there.
"""

from __future__ import annotations

import os
import posixpath
from typing import Any, Final

import attrs

from mini_harness.errors import PatchConflictError, PatchSyntaxError, WorkspaceError
from mini_harness.runtime.results import FileEffect, WithEffects, sha256_of
from mini_harness.tools.patch_files import FileWrite, PatchTree, commit
from mini_harness.tools.read_file import decode_text
from mini_harness.tools.unified_diff import FilePatch, Hunk, parse_patch
from mini_harness.tools.workspace import Workspace, decodable_path, quote_path

MAX_FILE_BYTES: Final = 8 << 20
_CONTEXT_SHOWN: Final = 3


def _numbered(lines: list[str], start: int, stop: int) -> str:
    start = max(start, 0)
    stop = min(stop, len(lines))
    if start >= stop:
        return "    (end of file)" if lines else "    (the file is empty)"
    width = len(str(stop))
    return "\n".join(
        f"    {number:>{width}}| {lines[number - 1].removesuffix(chr(13))}"
        for number in range(start + 1, stop + 1)
    )


def _same(file_line: str, patch_line: str) -> bool:
    return file_line.removesuffix("\r") == patch_line.removesuffix("\r")


def _find(lines: list[str], old: tuple[str, ...], expected: int, earliest: int) -> int | None:
    """Where `old` occurs in `lines` at or after `earliest`, nearest to `expected` first."""
    last = len(lines) - len(old)
    if last < earliest:
        return None
    expected = min(max(expected, earliest), last)
    for distance in range(max(expected - earliest, last - expected) + 1):
        for pos in (expected - distance, expected + distance):
            if earliest <= pos <= last and all(
                _same(lines[pos + k], line) for k, line in enumerate(old)
            ):
                return pos
    return None


def apply_hunks(shown: str, text: str, hunks: tuple[Hunk, ...]) -> str:
    """`text` with every hunk applied; PatchConflictError names the first that does not fit."""
    parts = text.split("\n")
    final_newline = parts[-1] == ""
    lines = parts[:-1] if final_newline else parts
    if text == "":
        lines, final_newline = [], True
    crlf = bool(lines) and lines[0].endswith("\r")
    offset = 0
    earliest = 0
    for hunk in hunks:
        expected = hunk.old_start - 1 + offset if hunk.old_lines else hunk.old_start + offset
        pos = _find(lines, hunk.old_lines, expected, earliest)
        if pos is None:
            raise _conflict(shown, hunk, lines, expected)
        new = [line + "\r" if crlf and not line.endswith("\r") else line for line in hunk.new_lines]
        reaches_end = pos + len(hunk.old_lines) == len(lines)
        lines[pos : pos + len(hunk.old_lines)] = new
        if reaches_end:
            final_newline = not hunk.new_ends_without_newline
        offset += len(hunk.new_lines) - len(hunk.old_lines)
        earliest = pos + len(new)
    if not lines:
        return ""
    return "\n".join(lines) + ("\n" if final_newline else "")


def _conflict(shown: str, hunk: Hunk, lines: list[str], expected: int) -> PatchConflictError:
    expects = "\n".join(f"    {line}" for line in hunk.old_lines) or "    (nothing)"
    around = _numbered(
        lines, expected - _CONTEXT_SHOWN, expected + len(hunk.old_lines) + _CONTEXT_SHOWN
    )
    message = (
        f"Hunk {hunk.number} ({hunk.header}) of {quote_path(shown)} does not apply: its old "
        f"lines are not in the file. Nothing was changed.\n"
        f"The hunk expects, at line {expected + 1}:\n{expects}\n"
        f"The file has there:\n{around}"
    )
    return PatchConflictError(shown, message)


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
            writes = [self._write(tree, patch) for patch in patches]
            commit(tree, writes, sync=self.sync)
        files = [
            {
                "path": write.path,
                "action": "added"
                if write.found is None
                else ("deleted" if write.new is None else "modified"),
                "hunks": len(patch.hunks),
            }
            for write, patch in zip(writes, patches, strict=True)
        ]
        effects = tuple(
            FileEffect(
                write.path,
                sha256_of(None if write.found is None else write.found.data),
                sha256_of(write.new),
            )
            for write in writes
        )
        return WithEffects(output={"applied": True, "files": files}, effects=effects)

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

    def _write(self, tree: PatchTree, patch: FilePatch) -> FileWrite:
        if (
            patch.old_path is not None
            and patch.new_path is not None
            and posixpath.normpath(patch.old_path) != posixpath.normpath(patch.new_path)
        ):
            raise WorkspaceError(
                patch.path,
                f"The patch renames {quote_path(patch.old_path)} to "
                f"{quote_path(patch.path)}; write renames as a deletion and an addition",
            )
        path = self.checked_path(patch.path)
        shown = quote_path(path)
        found = tree.read(path, MAX_FILE_BYTES)
        if patch.old_path is None and found is not None:
            raise PatchConflictError(
                path, f"The patch adds {shown}, but it exists already. Nothing was changed."
            )
        if patch.old_path is not None and found is None:
            raise PatchConflictError(
                path, f"The patch changes {shown}, but it does not exist. Nothing was changed."
            )
        if found is not None and decode_text(found.data) is None:
            raise WorkspaceError(path, f"File {shown} is binary; apply_patch changes text only")
        old = None if found is None else found.data
        return FileWrite(path, found, _patched(path, old, patch))


def _patched(path: str, old: bytes | None, patch: FilePatch) -> bytes | None:
    """The file's new bytes (None: deleted); raises PatchConflictError."""
    old_text = "" if old is None else old.decode("utf-8")
    bom = old_text.startswith("\ufeff")
    new_text = apply_hunks(path, old_text.removeprefix("\ufeff"), patch.hunks)
    if patch.new_path is None:
        if new_text:
            raise PatchConflictError(
                path,
                f"The patch deletes {quote_path(path)}, but lines the patch does "
                "not list would remain. Nothing was changed.",
            )
        return None
    return (("\ufeff" if bom else "") + new_text).encode("utf-8")
