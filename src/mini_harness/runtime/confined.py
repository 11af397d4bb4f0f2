"""Reading one regular file confined to a directory, for every reader that must not be led
outside it (the file tools, the project rules loader).

The path is resolved by the caller. The file is opened without following a link (one there
now was swapped in since it was resolved) and without blocking (a FIFO would block a reader
forever), then checked to be where it was resolved to, to be a regular file and to be small
enough, and read.
"""

from __future__ import annotations

import contextlib
import os
import stat

from mini_harness.errors import FileRefusedError

_KINDS = {
    stat.S_IFREG: "regular file",
    stat.S_IFDIR: "directory",
    stat.S_IFIFO: "FIFO (named pipe)",
    stat.S_IFCHR: "character device",
    stat.S_IFBLK: "block device",
    stat.S_IFSOCK: "socket",
}


def file_kind(mode: int) -> str:
    """What kind of file a stat mode describes, in words for error messages."""
    return _KINDS.get(stat.S_IFMT(mode), "special file")


_OPEN_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_CLOEXEC", 0)
)


def inside(real: str, root: str) -> bool:
    """True when the resolved path `real` is the resolved directory `root` or below it."""
    return real == root or real.startswith(root.rstrip(os.sep) + os.sep)


def read_confined(real: str, root: str, max_size: int) -> bytes:
    """The bytes of the regular file `real` (resolved) inside `root` (resolved), at most
    `max_size` of them.

    Raises OSError from the system, or FileRefusedError: `outside` when `real` or the file
    opened (a directory on the way swapped for a symlink after the path was resolved) is
    not inside `root`, `kind` when it is not a regular file, `size` when it is too large.
    """
    if not inside(real, root):
        raise FileRefusedError(outside=True)
    fd = os.open(real, _OPEN_FLAGS)
    try:
        # Where the open file really is, when the system can tell (Linux: /proc/self/fd).
        with contextlib.suppress(OSError):
            if not inside(os.readlink(f"/proc/self/fd/{fd}"), root):
                raise FileRefusedError(outside=True)
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise FileRefusedError(kind=file_kind(info.st_mode))
        if info.st_size > max_size:
            raise FileRefusedError(size=info.st_size)
        # Ask for one byte more than fstat promised: a short read is the end of the file,
        # a full one means it grew since, and the loop reads on up to the limit.
        want = info.st_size + 1
        chunks = [os.read(fd, want)]
        while len(chunks[-1]) == want and sum(map(len, chunks)) <= max_size:
            want = 1 << 16
            chunks.append(os.read(fd, want))
        data = b"".join(chunks)
        if len(data) > max_size:
            raise FileRefusedError(size=len(data))
        return data
    finally:
        os.close(fd)
