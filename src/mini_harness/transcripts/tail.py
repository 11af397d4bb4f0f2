"""A log's tail: finding its last line, and copying a torn tail aside before it is cut."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import attrs

from mini_harness.transcripts.beside import open_beside

_TAIL_CHUNK = 64 * 1024
_COPY_CHUNK = 1024 * 1024


@attrs.frozen
class Quarantined:
    """A torn or garbage tail copied aside to `path` before it was cut off the log."""

    path: Path
    offset: int
    length: int


def last_newline(fd: int, end: int) -> int:
    """Offset just past the last b"\\n" before `end` in `fd`, or 0 if there is none."""
    pos = end
    while pos > 0:
        start = max(0, pos - _TAIL_CHUNK)
        chunk = os.pread(fd, pos - start, start)
        index = chunk.rfind(b"\n")
        if index >= 0:
            return start + index + 1
        pos = start
    return 0


def copy_aside(fd: int, dir_fd: int, path: Path, offset: int, size: int) -> Quarantined:
    """Copy bytes offset..size of `fd` to a new `<log>.torn-<offset>` in the directory
    `dir_fd` (the log's, see beside.py), durably; OSError if not."""
    aside, out = _create_aside(dir_fd, path, offset)
    try:
        pos = offset
        while pos < size:
            chunk = os.pread(fd, min(_COPY_CHUNK, size - pos), pos)
            if not chunk:
                break
            view = memoryview(chunk)
            while view:
                view = view[os.write(out, view) :]
            pos += len(chunk)
        os.fsync(out)
    finally:
        os.close(out)
    os.fsync(dir_fd)
    return Quarantined(aside, offset, size - offset)


def _create_aside(dir_fd: int, path: Path, offset: int) -> tuple[Path, int]:
    """Create `<log>.torn-<offset>` (or `.torn-<offset>.N` if taken) in `dir_fd`: never
    over a copy, never through a link planted at the name."""
    base = f"{path.name}.torn-{offset}"
    for attempt in range(1000):
        name = base if attempt == 0 else f"{base}.{attempt}"
        try:
            return path.with_name(name), open_beside(dir_fd, name)
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, f"too many copies named {base}")
