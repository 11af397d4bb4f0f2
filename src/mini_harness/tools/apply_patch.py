"""`apply_patch`: a unified diff applied to the workspace, all or nothing.

Every hunk of every file is checked against the files as they are before anything is
written. Then each new file content goes to a temporary file beside its target and is
renamed over it; on any failure the files already replaced are put back. A conflict
changes nothing and says which file and hunk failed, with the file's current lines there.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from typing import Any, Final

import attrs

from mini_harness.errors import WorkspaceError
from mini_harness.runtime.confined import FileRefusedError
from mini_harness.runtime.results import FileEffect, WithEffects, sha256_of
from mini_harness.tools.read_file import decode_text
from mini_harness.tools.unified_diff import FilePatch, Hunk, PatchSyntaxError, parse_patch
from mini_harness.tools.workspace import (
    Workspace,
    quote_path,
)

MAX_FILE_BYTES: Final = 8 << 20
_CONTEXT_SHOWN: Final = 3


class PatchConflictError(WorkspaceError):
    """A hunk does not match the file as it is now; nothing was changed."""


@attrs.frozen
class _Target:
    """One file the patch touches: where it is and its bytes now (None: absent)."""

    patch: FilePatch
    shown: str  # workspace-relative path
    real: str
    old: bytes | None


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
    """The apply_patch handler, bound to one workspace."""

    workspace: Workspace

    def __call__(self, tool_input: dict[str, Any]) -> WithEffects:
        try:
            patches = parse_patch(tool_input["patch"])
        except PatchSyntaxError as exc:
            raise WorkspaceError(".", f"Not a patch apply_patch can use: {exc}") from None
        targets = [self._target(patch) for patch in patches]
        new_contents = [self._patched(target) for target in targets]
        effects = self._commit(targets, new_contents)
        files = [
            {
                "path": target.shown,
                "action": "added"
                if target.old is None
                else ("deleted" if content is None else "modified"),
                "hunks": len(target.patch.hunks),
            }
            for target, content in zip(targets, new_contents, strict=True)
        ]
        return WithEffects(output={"applied": True, "files": files}, effects=effects)

    # --- checking -------------------------------------------------------------

    def _target(self, patch: FilePatch) -> _Target:
        if (
            patch.old_path is not None
            and patch.new_path is not None
            and os.path.normpath(patch.old_path) != os.path.normpath(patch.new_path)
        ):
            raise WorkspaceError(
                patch.path,
                f"The patch renames {quote_path(patch.old_path)} to "
                f"{quote_path(patch.path)}; write renames as a deletion and an addition",
            )
        path = patch.path
        shown = quote_path(path)
        if "\0" in path or os.path.isabs(path):
            self.workspace.locate(path)  # raises the workspace's own message
        joined = os.path.join(self.workspace.root, path)
        if os.path.lexists(joined):
            found = self.workspace.locate(path)  # outside, symlinks leading out, ...
            if os.path.islink(joined) or os.path.realpath(joined) != os.path.normpath(joined):
                raise WorkspaceError(
                    path, f"Path {shown} is or goes through a symlink; apply_patch refuses it"
                )
            if not stat.S_ISREG(found.mode):
                raise WorkspaceError(path, f"Path {shown} is not a regular file")
            if patch.old_path is None:
                raise PatchConflictError(
                    path, f"The patch adds {shown}, but it exists already. Nothing was changed."
                )
            return _Target(patch, found.relative, found.real, self._read(path, found.real))
        if patch.old_path is not None:
            raise PatchConflictError(
                path, f"The patch changes {shown}, but it does not exist. Nothing was changed."
            )
        real = os.path.normpath(joined)
        if not self.workspace.contains(real) or real == str(self.workspace.root):
            raise WorkspaceError(path, f"Path {shown} leads outside the workspace")
        ancestor = os.path.dirname(real)
        while not os.path.lexists(ancestor):
            ancestor = os.path.dirname(ancestor)
        self.workspace.locate_dir(self.workspace.relative(ancestor))
        if os.path.realpath(ancestor) != ancestor:
            raise WorkspaceError(
                path, f"Path {shown} goes through a symlink; apply_patch refuses it"
            )
        return _Target(patch, self.workspace.relative(real), real, None)

    def _read(self, path: str, real: str) -> bytes:
        shown = quote_path(path)
        try:
            data = self.workspace.read(real, MAX_FILE_BYTES)
        except FileRefusedError as exc:
            reason = (
                f"is over {MAX_FILE_BYTES:,} bytes"
                if exc.size is not None
                else "changed while being read"
            )
            raise WorkspaceError(path, f"File {shown} {reason}") from None
        except OSError as exc:
            raise WorkspaceError(
                path, f"File {shown} cannot be read: {exc.strerror or exc}"
            ) from None
        if decode_text(data) is None:
            raise WorkspaceError(path, f"File {shown} is binary; apply_patch changes text only")
        return data

    def _patched(self, target: _Target) -> bytes | None:
        """The file's new bytes (None: deleted); raises PatchConflictError."""
        old_text = "" if target.old is None else target.old.decode("utf-8")
        bom = old_text.startswith("\ufeff")
        new_text = apply_hunks(target.shown, old_text.removeprefix("\ufeff"), target.patch.hunks)
        if target.patch.new_path is None:
            if new_text:
                raise PatchConflictError(
                    target.shown,
                    f"The patch deletes {quote_path(target.shown)}, but lines the patch does "
                    "not list would remain. Nothing was changed.",
                )
            return None
        return (("\ufeff" if bom else "") + new_text).encode("utf-8")

    # --- writing --------------------------------------------------------------

    def _commit(
        self, targets: list[_Target], contents: list[bytes | None]
    ) -> tuple[FileEffect, ...]:
        staged: list[tuple[_Target, str | None]] = []
        done: list[_Target] = []
        made_dirs: list[str] = []
        try:
            for target, content in zip(targets, contents, strict=True):
                temp = None if content is None else self._stage(target, content, made_dirs)
                staged.append((target, temp))
            for target, temp in staged:
                if temp is None:
                    os.unlink(target.real)
                else:
                    os.replace(temp, target.real)
                done.append(target)
        except OSError as exc:
            for target in reversed(done):
                self._restore(target)
            for _, temp in staged:
                if temp is not None:
                    with contextlib.suppress(OSError):
                        os.unlink(temp)
            for directory in reversed(made_dirs):
                with contextlib.suppress(OSError):
                    os.rmdir(directory)
            raise WorkspaceError(
                ".", f"The patch could not be written ({exc}); nothing was changed"
            ) from None
        return tuple(
            FileEffect(target.shown, sha256_of(target.old), sha256_of(content))
            for target, content in zip(targets, contents, strict=True)
        )

    def _stage(self, target: _Target, content: bytes, made_dirs: list[str]) -> str:
        directory = os.path.dirname(target.real)
        missing: list[str] = []
        probe = directory
        while not os.path.exists(probe):
            missing.append(probe)
            probe = os.path.dirname(probe)
        for path in reversed(missing):
            os.mkdir(path)
            made_dirs.append(path)
        fd, temp = tempfile.mkstemp(
            prefix=f".{os.path.basename(target.real)}.", suffix=".patch-tmp", dir=directory
        )
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(content)
                handle.flush()
                os.fsync(handle.fileno())
                if target.old is not None:
                    os.fchmod(handle.fileno(), stat.S_IMODE(os.stat(target.real).st_mode))
                else:
                    umask = os.umask(0)
                    os.umask(umask)
                    os.fchmod(handle.fileno(), 0o666 & ~umask)
        except OSError:
            with contextlib.suppress(OSError):
                os.unlink(temp)
            raise
        return temp

    def _restore(self, target: _Target) -> None:
        with contextlib.suppress(OSError):
            if target.old is None:
                os.unlink(target.real)
            else:
                with open(target.real, "wb") as handle:
                    handle.write(target.old)
