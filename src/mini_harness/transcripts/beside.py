"""Files beside a transcript (a torn tail set aside, the view page), opened through the
descriptor of the directory the transcript was opened in.

A transcript may live in a directory a model can write (the workspace), so a name beside
it may hold a symlink the model planted, and the directory's own path may have been
swapped for a link since the transcript was opened. Neither is ever followed: the
directory is reached by its descriptor, the name is opened with `O_NOFOLLOW`, and only a
regular file is written.
"""

from __future__ import annotations

import errno
import os
import stat
from typing import Final

_CLOEXEC: Final = getattr(os, "O_CLOEXEC", 0)
_DIRECTORY_FLAGS: Final = os.O_RDONLY | os.O_DIRECTORY | _CLOEXEC
_WRITE_FLAGS: Final = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | _CLOEXEC


def open_directory(path: str | os.PathLike[str]) -> tuple[int, str]:
    """The descriptor of the directory holding `path`, and `path`'s last name in it.

    The directory's path is the caller's, taken as given (a link in it is followed, as
    the caller asked); everything opened beside `path` later goes through this descriptor.
    """
    directory, name = os.path.split(os.path.abspath(os.fspath(path)))
    return os.open(directory, _DIRECTORY_FLAGS), name


def open_beside(dir_fd: int, name: str, *, replace: bool = False, mode: int = 0o600) -> int:
    """Open `name` in the directory `dir_fd` for writing, never through a symlink.

    Without `replace`, the file must be new (`O_EXCL`: FileExistsError if the name is
    taken, a link included). With it, an existing regular file is emptied and reused.
    Anything else at the name is refused with an OSError that says what it is."""
    flags = _WRITE_FLAGS | (0 if replace else os.O_EXCL)
    try:
        fd = os.open(name, flags, mode, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise OSError(errno.ELOOP, "it is a symbolic link, which is never followed") from None
        if exc.errno == errno.ENXIO:  # a FIFO no one reads
            raise OSError(errno.ENXIO, "it is not a regular file") from None
        raise
    try:
        regular = stat.S_ISREG(os.fstat(fd).st_mode)
        if regular and replace:
            os.ftruncate(fd, 0)
            os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    if not regular:
        os.close(fd)
        raise OSError(errno.EINVAL, "it is not a regular file")
    return fd


def write_beside(dir_fd: int, name: str, data: bytes, *, replace: bool = False) -> None:
    """Write `data` as the whole content of `name` in `dir_fd` (see open_beside)."""
    fd = open_beside(dir_fd, name, replace=replace, mode=0o666)  # less the umask
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)
