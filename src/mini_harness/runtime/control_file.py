"""Reading a control file (the approval policy, `.mini-harness/policy.toml`, and the config
files of cli/settings.py): a regular file of bounded size, or nothing.

A control file is read once, when a command starts; a FIFO is never waited on and a device
never read from, so no policy or config file can hang or exhaust the process that reads it.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Final

from mini_harness.errors import PolicyError

MAX_CONTROL_FILE_BYTES: Final = 1 << 20
"""A control file is a few rules or settings: anything larger than this is refused, not
read."""

_FILE_KINDS: Final = {
    stat.S_IFIFO: "a FIFO",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFDIR: "a directory",
    stat.S_IFSOCK: "a socket",
}


def read_control_file(path: Path, shown: str) -> bytes | None:
    """The bytes of the control file at `path` (named `shown` in errors), None if there
    is none. Only a regular file of at most MAX_CONTROL_FILE_BYTES is read: a FIFO is never
    waited on (opened non-blocking), a device such as /dev/zero never read from."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise PolicyError(shown, f"{shown} cannot be read: {exc.strerror}") from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            kind = _FILE_KINDS.get(stat.S_IFMT(mode), "a special file")
            raise PolicyError(shown, f"{shown} is {kind}, not a regular file: it was not read")
        with os.fdopen(os.dup(fd), "rb") as handle:
            data = handle.read(MAX_CONTROL_FILE_BYTES + 1)
    except OSError as exc:
        raise PolicyError(shown, f"{shown} cannot be read: {exc.strerror}") from None
    finally:
        os.close(fd)
    if len(data) > MAX_CONTROL_FILE_BYTES:
        raise PolicyError(
            shown,
            f"{shown} is larger than {MAX_CONTROL_FILE_BYTES:,} bytes: it was not read",
        )
    return data
