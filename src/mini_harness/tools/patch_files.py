"""The files apply_patch reads and writes, reached through directory descriptors.

Every directory on a path is opened from the workspace root's descriptor one name at a
time without following a symlink (`O_DIRECTORY | O_NOFOLLOW`, as `openat` does): a link
on the way is refused whether it leads inside, outside or nowhere, and a directory
swapped for a link after it was opened is still the directory that is written. Nothing
is opened, written, renamed or removed by a path from the root.

Writing is two steps. Staging writes each new content to a temporary file beside its
target. Swapping renames each one over its target (a new file is linked, so that it never
replaces one that appeared meanwhile): right before, the target must still be the file
that was read, with the same bytes, and right after, the replaced file (still open) must
still have them; a writer that appended in between makes the patch refuse instead of
losing its lines. A failure anywhere puts every file back as it is now, with its mode."""

from __future__ import annotations

import contextlib
import errno
import functools
import itertools
import os
import secrets
import stat
from typing import Final

import attrs

from mini_harness.errors import PatchConflictError, WorkspaceError
from mini_harness.runtime.confined import file_kind
from mini_harness.tools.workspace import Workspace, quote_path

_SPARE_PREFIX: Final = secrets.token_hex(6)
_CLOEXEC: Final = getattr(os, "O_CLOEXEC", 0)
_DIR_FLAGS: Final = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | _CLOEXEC
_READ_FLAGS: Final = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | _CLOEXEC
MAX_CARRIED: Final = 1 << 20  # appended bytes carried between an old file and its replacement
_APPEND_FLAGS: Final = os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW | _CLOEXEC
_NEW_FLAGS: Final = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | _CLOEXEC
# Filesystems without hard links (or that refuse one here) fall back to plain renames.
_NO_LINKS: Final = (errno.EPERM, errno.EOPNOTSUPP, errno.ENOSYS, errno.EMLINK, errno.EXDEV)


_SPARE_NAMES = itertools.count()


def _spare_name() -> str:
    # Unpredictable per process, distinct per call: made with O_EXCL or link, which fail
    # rather than follow or replace anything already there.
    return f".mini-harness-{_SPARE_PREFIX}-{next(_SPARE_NAMES)}.tmp"


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
        self._dirs[()] = os.open(self.workspace.root, _DIR_FLAGS)
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
            fd = os.open(name, _DIR_FLAGS, dir_fd=parent)
        except FileNotFoundError:
            if made is None:
                return None
            os.mkdir(name, 0o777, dir_fd=parent)
            made.append((parent, name))
            fd = os.open(name, _DIR_FLAGS, dir_fd=parent)
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
        fd = os.open(name, _READ_FLAGS, dir_fd=dir_fd)
        self._files.append(fd)
        opened = os.fstat(fd)
        if (opened.st_dev, opened.st_ino) != (info.st_dev, info.st_ino):
            raise PatchConflictError(
                path, f"File {quote_path(path)} was replaced while it was being read"
            )
        data = os.pread(fd, max_size + 1, 0)
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


@attrs.define
class _Placed:
    """One write in progress: its directory, its staged file, and whether it is in place."""

    write: FileWrite
    dir_fd: int
    name: str
    staged: str | None = None
    swapped: bool = False  # the name holds the new content (or, for a deletion, nothing)


def commit(tree: PatchTree, writes: list[FileWrite], *, sync: bool) -> None:
    """Write every change, or none: on any failure everything is put back and the error
    (PatchConflictError, or WorkspaceError for a system error) is raised."""
    made: list[tuple[int, str]] = []
    placed: list[_Placed] = []
    try:
        for write in writes:
            *parents, name = write.path.split("/")
            dir_fd = tree.directory(tuple(parents), write.path, made)
            assert dir_fd is not None  # created when missing
            placed.append(_Placed(write, dir_fd, name))
            if write.new is not None:
                placed[-1].staged = _stage(placed[-1], write.new, sync=sync)
        for item in placed:
            _swap(item)
    except (OSError, PatchConflictError, WorkspaceError) as exc:
        _roll_back(placed, made)
        if isinstance(exc, OSError):
            raise WorkspaceError(
                ".", f"The patch could not be written ({exc}); nothing was changed"
            ) from None
        raise
    if sync:
        for dir_fd in {item.dir_fd for item in placed} | {parent for parent, _ in made}:
            with contextlib.suppress(OSError):
                os.fsync(dir_fd)
    # Last, so that a writer that opened a replaced file just before the swap has written.
    for item in placed:
        _carry_late_appends(item)


def _stage(item: _Placed, content: bytes, *, sync: bool) -> str:
    write = item.write
    name = _spare_name()
    # A new file is created with its mode less the umask, as the system applies it; a
    # replaced file keeps its own permission bits (or those the patch gives it).
    if write.mode is not None:
        mode = write.mode
    elif write.found is not None:
        mode = stat.S_IMODE(write.found.info.st_mode)
    else:
        mode = 0o666
    fd = os.open(name, _NEW_FLAGS, mode & 0o777, dir_fd=item.dir_fd)
    try:
        view = memoryview(content)
        while view:
            view = view[os.write(fd, view) :]
        if write.found is not None and (mode & ~0o777 or mode & _umask()):
            os.fchmod(fd, mode)  # the umask took bits the file had
        if sync:
            os.fsync(fd)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(name, dir_fd=item.dir_fd)
        raise
    finally:
        os.close(fd)
    return name


@functools.cache
def _umask() -> int:
    """The process's umask, read once where the system shows it (setting it to read it
    would race other threads); all bits when it cannot be read (always fchmod)."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    return 0o777


def _swap(item: _Placed) -> None:
    write, dir_fd, name = item.write, item.dir_fd, item.name
    found = write.found
    if found is None:
        assert item.staged is not None
        _place_new(item.staged, name, dir_fd, write.path)
        item.staged = None
        item.swapped = True
        return
    found.unchanged(write.path)
    if item.staged is None:
        os.unlink(name, dir_fd=dir_fd)
    else:
        os.rename(item.staged, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        item.staged = None
    item.swapped = True
    # The replaced file, still open, must still have the bytes read: a writer between the
    # check above and the swap would otherwise lose what it wrote.
    if os.pread(found.fd, len(found.data) + 1, 0) != found.data:
        raise PatchConflictError(
            write.path,
            f"File {quote_path(write.path)} changed while the patch was being applied "
            "(another program wrote to it); nothing was changed.",
        )


def _carry_late_appends(item: _Placed) -> None:
    """Lines appended to a replaced file after it was checked, by a writer that opened it
    before the swap, are appended to the new file rather than lost with the old one."""
    found = item.write.found
    if found is None or item.write.new is None:
        return
    with contextlib.suppress(OSError):
        size = os.fstat(found.fd).st_size
        if size <= len(found.data) or os.pread(found.fd, len(found.data), 0) != found.data:
            return
        late = os.pread(found.fd, size - len(found.data), len(found.data))
        fd = os.open(item.name, _APPEND_FLAGS, dir_fd=item.dir_fd)
        try:
            os.write(fd, late)
        finally:
            os.close(fd)


def _put_back(item: _Placed) -> None:
    """Give a replaced or deleted file its name back: its bytes as they are now (read from
    the descriptor still open on it, with any lines appended to its replacement since),
    and its permission bits."""
    found = item.write.found
    assert found is not None
    size = os.fstat(found.fd).st_size
    content = os.pread(found.fd, max(size, len(found.data)) + 1, 0)
    new = item.write.new
    if new is not None:
        fd = os.open(item.name, _READ_FLAGS, dir_fd=item.dir_fd)
        try:
            now = os.pread(fd, len(new) + MAX_CARRIED, 0)
        finally:
            os.close(fd)
        if len(now) > len(new) and now.startswith(new):
            content += now[len(new) :]
    spare = _spare_name()
    fd = os.open(spare, _NEW_FLAGS, 0o600, dir_fd=item.dir_fd)
    try:
        view = memoryview(content)
        while view:
            view = view[os.write(fd, view) :]
        os.fchmod(fd, stat.S_IMODE(found.info.st_mode))
    finally:
        os.close(fd)
    os.rename(spare, item.name, src_dir_fd=item.dir_fd, dst_dir_fd=item.dir_fd)


def _place_new(staged: str, name: str, dir_fd: int, shown: str) -> None:
    """Give the staged file its name, never over a file that appeared meanwhile."""
    try:
        os.link(staged, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd, follow_symlinks=False)
    except FileExistsError:
        raise PatchConflictError(
            shown,
            f"File {quote_path(shown)} appeared while the patch was being applied; "
            "nothing was changed.",
        ) from None
    except OSError as exc:
        if exc.errno not in _NO_LINKS:
            raise
        try:
            os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        except FileNotFoundError:
            pass
        else:
            raise PatchConflictError(
                shown, f"File {quote_path(shown)} appeared while the patch was being applied"
            )
        os.rename(staged, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        return
    os.unlink(staged, dir_fd=dir_fd)


def _roll_back(placed: list[_Placed], made: list[tuple[int, str]]) -> None:
    for item in reversed(placed):
        if item.swapped:
            with contextlib.suppress(OSError):
                if item.write.found is None:
                    os.unlink(item.name, dir_fd=item.dir_fd)
                else:
                    _put_back(item)
        if item.staged is not None:
            with contextlib.suppress(OSError):
                os.unlink(item.staged, dir_fd=item.dir_fd)
    for parent, name in reversed(made):
        with contextlib.suppress(OSError):
            os.rmdir(name, dir_fd=parent)
