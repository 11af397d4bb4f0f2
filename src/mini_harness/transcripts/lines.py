"""The lines of a transcript as a reader takes them: each held only up to a bound.

A longer line (a torn tail of a gigabyte, the endless line of /dev/zero) is counted and
hashed as it streams by, never held whole; in a pipe or device, where it may never end,
reading stops at the bound.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
from collections.abc import Iterator
from typing import Any, BinaryIO

import attrs

BOM = b"\xef\xbb\xbf"
MAX_LINE_BYTES = 64 * 1024 * 1024
"""The longest line a reader holds (64 MiB, 16 times the writer's default event cap); a
longer line is a bad line, streamed past in bounded memory."""
HEADER_LINE_BYTES = 64 * 1024
"""The longest first line: a TranscriptStarted header is about 150 bytes."""
_CHUNK = 1024 * 1024


@attrs.frozen
class LongLine:
    """A line longer than the reader holds: its length, hash and whether it ended."""

    length: int
    hasher: Any  # hashlib's sha256 object over the bytes read
    terminated: bool | None  # None: not known, reading stopped (a stream that may not end)


class BoundedLines:
    """The lines of a byte stream, each held up to a bound; longer ones are LongLine.

    `tap`, when set, is a hash object fed every byte of a long line as it streams by: the
    reader sets it while a torn tail may be under way, so the tail is hashed whole.
    """

    def __init__(self, handle: BinaryIO, *, regular: bool) -> None:
        self.handle = handle
        self.regular = regular
        self.tap: Any = None
        self.bom = False  # whether line 1 began with a UTF-8 BOM (not part of the line)

    def __iter__(self) -> Iterator[bytes | LongLine]:
        readline = self.handle.readline
        raw = readline(HEADER_LINE_BYTES)
        if len(raw) == HEADER_LINE_BYTES and raw[-1:] != b"\n":
            yield self._long([raw])
            raw = readline(_CHUNK)
        elif raw.startswith(BOM):
            self.bom = True
            raw = raw[len(BOM) :]
        while raw:
            if len(raw) == _CHUNK and raw[-1:] != b"\n":
                yield self._gather(raw)
            else:
                yield raw
            raw = readline(_CHUNK)

    def _gather(self, first: bytes) -> bytes | LongLine:
        """A line longer than one chunk: joined if it ends within the bound, else long."""
        pieces = [first]
        size = len(first)
        while size <= MAX_LINE_BYTES:
            piece = self.handle.readline(_CHUNK)
            pieces.append(piece)
            size += len(piece)
            if piece[-1:] != b"\n" and len(piece) == _CHUNK:
                continue
            if size <= MAX_LINE_BYTES:
                return b"".join(pieces)
        return self._long(pieces)

    def _long(self, pieces: list[bytes]) -> LongLine:
        """Count and hash the rest of a line over the bound (only in a file: a pipe or a
        device may never end, so there reading stops)."""
        hasher = hashlib.sha256()
        length = 0
        # Only the last of `pieces` may end the line; each is held no longer than hashing
        # it takes.
        held = (pieces.pop(0) for _ in range(len(pieces)))
        rest = iter(functools.partial(self.handle.readline, _CHUNK), b"")
        for piece in itertools.chain(held, rest if self.regular else ()):
            hasher.update(piece)
            if self.tap is not None:
                self.tap.update(piece)
            length += len(piece)
            if piece[-1:] == b"\n":
                return LongLine(length, hasher, True)
        return LongLine(length, hasher, False if self.regular else None)
