"""The files apply_patch reads and writes, reached through directory descriptors.

Every directory on a path is opened from the workspace root's descriptor one name at a
time without following a symlink (`O_DIRECTORY | O_NOFOLLOW`, as `openat` does): a link
on the way is refused whether it leads inside, outside or nowhere, and a directory
swapped for a link after it was opened is still the directory that is written. Nothing
is opened, written, renamed or removed by a path from the root.

Every file a patch reads stays open until the call ends: `patch_writes` checks through
that descriptor that a file it replaces still has the bytes that were read."""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from typing import Final

import attrs

from mini_harness.errors import PatchConflictError, WorkspaceError
from mini_harness.runtime.confined import file_kind
from mini_harness.tools.workspace import CLOEXEC, Workspace, open_below, quote_path

READ_FLAGS: Final = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | CLOEXEC


@attrs.define(eq=False)
class Found:
    """A regular file as it was read: its directory, name, open descriptor, stat, bytes."""

    dir_fd: int
    name: str
    fd: int
    info: os.stat_result
    data: bytes

    def unchanged(self, shown: str) -> None:
        """Raise PatchConflictError unless the name still holds this file with these bytes."""
        try:
            now = os.stat(self.name, dir_fd=self.dir_fd, follow_symlinks=False)
        except FileNotFoundError:
            now = None
        same = (
            now is not None
            and (now.st_dev, now.st_ino) == (self.info.st_dev, self.info.st_ino)
            and os.pread(self.fd, len(self.data) + 1, 0) == self.data
        )
        if not same:
            raise PatchConflictError(
                shown,
                f"File {quote_path(shown)} changed while the patch was being applied "
                "(another program wrote to it); nothing was changed.",
            )


@attrs.frozen
class FileWrite:
    """One file a patch changes: `found` as read (None: absent), `new` bytes (None: delete)
    and `mode`, the new file's permission bits (None: the old file's, or the default)."""

    path: str
    found: Found | None
    new: bytes | None
    mode: int | None = None


@attrs.define
class PatchTree:
    """The workspace seen through directory descriptors, for one apply_patch call.

    Use as a context manager: every descriptor it opened is closed on leaving."""

    workspace: Workspace
    _dirs: dict[tuple[str, ...], int] = attrs.field(factory=dict, init=False)
    _files: list[int] = attrs.field(factory=list, init=False)
    _read: dict[str, Found | None] = attrs.field(factory=dict, init=False)

    def __enter__(self) -> PatchTree:
        self._dirs[()] = self.workspace.open_root()
        return self

    def __exit__(self, *exc_info: object) -> None:
        for fd in [*self._dirs.values(), *self._files]:
            with contextlib.suppress(OSError):
                os.close(fd)
        self._dirs.clear()
        self._files.clear()

    def directory(
        self, parts: tuple[str, ...], shown: str, made: list[tuple[int, str]] | None = None
    ) -> int | None:
        """The descriptor of the directory `parts` (None: it does not exist). With `made`,
        missing directories are created, each recorded as (parent descriptor, name)."""
        if parts in self._dirs:
            return self._dirs[parts]
        parent = self.directory(parts[:-1], shown, made)
        if parent is None:
            return None
        name = parts[-1]
        try:
            fd = open_below(parent, name)
        except FileNotFoundError:
            if made is None:
                return None
            os.mkdir(name, 0o777, dir_fd=parent)
            made.append((parent, name))
            fd = open_below(parent, name)
        except OSError as exc:
            raise WorkspaceError(shown, _unreachable(shown, parts, parent, exc)) from None
        self._dirs[parts] = fd
        return fd

    def read(self, path: str, max_size: int) -> Found | None:
        """The regular file at the checked relative `path`, or None when it is absent
        (read once: a second call returns what the first found)."""
        if path not in self._read:
            self._read[path] = self._read_file(path, max_size)
        return self._read[path]

    def remove_empty_directories(self, path: str) -> None:
        """Remove the directories of `path` that are empty now, deepest first, as git does
        when a directory's last file is deleted (never the workspace root)."""
        parts = tuple(path.split("/")[:-1])
        while parts:
            parent = self._dirs.get(parts[:-1])
            if parent is None:
                return
            try:
                os.rmdir(parts[-1], dir_fd=parent)
            except OSError:
                return
            parts = parts[:-1]

    def _read_file(self, path: str, max_size: int) -> Found | None:
        *parents, name = path.split("/")
        dir_fd = self.directory(tuple(parents), path)
        if dir_fd is None:
            return None
        try:
            info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        except FileNotFoundError:
            return None
        _check_regular(path, info)
        if info.st_size > max_size:
            raise WorkspaceError(path, f"File {quote_path(path)} is over {max_size:,} bytes")
        fd = os.open(name, READ_FLAGS, dir_fd=dir_fd)
        self._files.append(fd)
        opened = os.fstat(fd)
        if (opened.st_dev, opened.st_ino) != (info.st_dev, info.st_ino):
            raise PatchConflictError(
                path, f"File {quote_path(path)} was replaced while it was being read"
            )
        # A buffer the file's size (one of max_size costs a memory mapping per file); a
        # file that grew since is read on, up to the limit.
        size = min(opened.st_size, max_size)
        data = os.pread(fd, size + 1, 0)
        if len(data) > size:
            data += os.pread(fd, max_size + 1 - len(data), len(data))
        if len(data) > max_size:
            raise WorkspaceError(path, f"File {quote_path(path)} is over {max_size:,} bytes")
        return Found(dir_fd, name, fd, opened, data)


def _check_regular(path: str, info: os.stat_result) -> None:
    if stat.S_ISLNK(info.st_mode):
        raise WorkspaceError(path, f"Path {quote_path(path)} is a symlink; apply_patch refuses it")
    if not stat.S_ISREG(info.st_mode):
        raise WorkspaceError(
            path, f"Path {quote_path(path)} is a {file_kind(info.st_mode)}, not a regular file"
        )


def _unreachable(shown: str, parts: tuple[str, ...], parent: int, exc: OSError) -> str:
    """Why the directory `parts` cannot be opened (never following a link to say so)."""
    directory = quote_path("/".join(parts))
    with contextlib.suppress(OSError):
        if exc.errno in (errno.ELOOP, errno.ENOTDIR) and stat.S_ISLNK(
            os.stat(parts[-1], dir_fd=parent, follow_symlinks=False).st_mode
        ):
            return (
                f"Path {quote_path(shown)} goes through a symlink ({directory}); "
                "apply_patch refuses it"
            )
    if exc.errno == errno.ENOTDIR:
        return f"Path {quote_path(shown)} goes through {directory}, which is not a directory"
    return f"Path {quote_path(shown)} cannot be reached: {exc.strerror or exc}"
