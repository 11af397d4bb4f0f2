"""The patch that undoes an applied apply_patch call, checked before anything is written."""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from mini_harness.errors import PatchConflictError, WorkspaceError
from mini_harness.runtime.results import FileEffect, sha256_of
from mini_harness.tools.apply_patch import MAX_FILE_BYTES, ApplyPatch
from mini_harness.tools.patch_files import PatchTree
from mini_harness.tools.patch_text import format_patch, reverse
from mini_harness.tools.unified_diff import FilePatch, parse_patch
from mini_harness.tools.workspace import Workspace, quote_path


def patch_reversal(workspace: Workspace, patch: str, effects: Sequence[FileEffect]) -> str:
    """The patch text that undoes `patch`, which an apply_patch call applied with the
    recorded `effects`. Every file the call changed must still have the sha256 the call
    left, and the reversal must give back exactly the recorded `before` bytes; otherwise
    WorkspaceError says which file and why (nothing is written here)."""
    tool = ApplyPatch(workspace)
    patches = parse_patch(patch)
    with PatchTree(workspace) as tree:
        for effect in effects:
            path = effect.path
            found = tree.read(tool.checked_path(path), MAX_FILE_BYTES)
            now = sha256_of(None if found is None else found.data)
            if now != effect.after:
                state = "is absent" if now is None else f"now has sha256 {now[:12]}"
                raise WorkspaceError(path, f"{path} changed since (it {state} in {workspace.root})")
        reversed_patches = []
        for applied in reversed(patches):
            copied = None
            if applied.copy and applied.new_path is not None:
                found = tree.read(tool.checked_path(applied.new_path), MAX_FILE_BYTES)
                copied = None if found is None else found.data.decode("utf-8")
            reversed_patches.append(reverse(applied, copied))
    # The forward hunks may have landed away from their numbers (the file had moved on,
    # or git's rules put a contextless hunk at an end): each reversed hunk is numbered
    # where it is found, so that apply_patch finds it there and nowhere else.
    placed: list[list[int]] = []
    wanted = {effect.path: effect.before for effect in effects}
    with PatchTree(workspace) as tree:
        try:
            tool.plan(tree, tuple(reversed_patches), placed)
            text = format_patch(tuple(map(_numbered_at, reversed_patches, placed)))
            planned = tool.plan(tree, parse_patch(text))
        except PatchConflictError as exc:
            raise WorkspaceError(exc.path, f"reversing it does not fit: {exc.message}") from None
    for item in planned:
        for write in item.writes:
            if write.path not in wanted or sha256_of(write.new) != wanted[write.path]:
                raise WorkspaceError(
                    write.path, f"reversing {quote_path(write.path)} would not restore it"
                )
    return text


def _numbered_at(patch: FilePatch, positions: list[int]) -> FilePatch:
    """`patch` with each hunk's new start set to where it was found (0-based positions)."""
    return attrs.evolve(
        patch,
        hunks=tuple(
            attrs.evolve(hunk, new_start=pos + 1) if hunk.new_lines else hunk
            for hunk, pos in zip(patch.hunks, positions, strict=True)
        ),
    )
