"""Writing a patch's files through the directory descriptors `patch_files` opened.

Writing is two steps. Staging writes each new content to a temporary file beside its
target. Swapping renames each one over its target (a new file is linked, so that it never
replaces one that appeared meanwhile): right before, the target must still be the file
that was read, with the same bytes, and right after, the replaced file (still open) must
still have them; a writer that appended in between makes the patch refuse instead of
losing its lines. A failure anywhere puts every file back as it is now, with its mode.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import itertools
import os
import secrets
import stat
from concurrent.futures import ThreadPoolExecutor
from typing import Final

import attrs

from mini_harness.errors import PatchConflictError, WorkspaceError
from mini_harness.tools.patch_files import READ_FLAGS, FileWrite, PatchTree
from mini_harness.tools.workspace import CLOEXEC, quote_path

_SPARE_PREFIX: Final = secrets.token_hex(6)
_STAGERS: Final = 8  # threads staging the files of a large patch
MAX_CARRIED: Final = 1 << 20  # appended bytes carried between an old file and its replacement
_APPEND_FLAGS: Final = os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW | CLOEXEC
_NEW_FLAGS: Final = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | CLOEXEC
# Filesystems without hard links (or that refuse one here) fall back to plain renames.
_NO_LINKS: Final = (errno.EPERM, errno.EOPNOTSUPP, errno.ENOSYS, errno.EMLINK, errno.EXDEV)


_SPARE_NAMES = itertools.count()


def _spare_name() -> str:
    # Unpredictable per process, distinct per call: made with O_EXCL or link, which fail
    # rather than follow or replace anything already there.
    return f".mini-harness-{_SPARE_PREFIX}-{next(_SPARE_NAMES)}.tmp"


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
        _stage_all(placed, sync=sync)
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
        _sync_directories({item.dir_fd for item in placed} | {parent for parent, _ in made})
    # Last, so that a writer that opened a replaced file just before the swap has written.
    for item in placed:
        _carry_late_appends(item)


def _stage_all(placed: list[_Placed], *, sync: bool) -> None:
    """Stage every new content; many files to sync are written and synced by a few
    threads at once, which the file system serves faster than one after the other.
    Without the sync, one thread is faster: the threads cost more than they save."""
    todo = [item for item in placed if item.write.new is not None]
    if not sync or len(todo) < _STAGERS:
        for item in todo:
            item.staged = _stage(item, sync=sync)
        return
    with ThreadPoolExecutor(max_workers=_STAGERS) as pool:
        staging = [(item, pool.submit(_stage, item, sync=sync)) for item in todo]
    failed: OSError | None = None
    for item, future in staging:
        try:
            item.staged = future.result()
        except OSError as exc:
            failed = failed or exc
    if failed is not None:
        raise failed


def _sync_directories(fds: set[int]) -> None:
    """Sync each directory a name was written in: several at once, as files are synced."""

    def sync(fd: int) -> None:
        with contextlib.suppress(OSError):
            os.fsync(fd)

    if len(fds) < 2:
        for fd in fds:
            sync(fd)
        return
    with ThreadPoolExecutor(max_workers=min(len(fds), _STAGERS)) as pool:
        for _ in pool.map(sync, fds):
            pass


def _stage(item: _Placed, *, sync: bool) -> str:
    write = item.write
    content = write.new
    assert content is not None
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
        fd = os.open(item.name, READ_FLAGS, dir_fd=item.dir_fd)
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
