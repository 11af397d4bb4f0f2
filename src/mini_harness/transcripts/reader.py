"""Streaming transcript reader: typed events, chain checks, torn tails told apart from damage.

The one reading path: every reader of transcripts (verify, repair, the fold, golden
checks) iterates a TranscriptReader, which types each line with the codec's one decoder.
Memory stays bounded whatever the file holds: a line is held only up to MAX_LINE_BYTES;
a longer one (a torn tail of a gigabyte, a symlink to /dev/zero) is counted and hashed as
it streams by, never held whole; in a pipe or device, where it may never end, reading
stops at the bound.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import itertools
import os
import stat
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, BinaryIO, cast

import attrs
import msgspec

from mini_harness.errors import (
    DecodeError,
    HeaderError,
    TranscriptCorruptError,
    TranscriptError,
    TranscriptFormatError,
)
from mini_harness.events import FORMAT_VERSION, Event, TranscriptStarted
from mini_harness.transcripts.codec import (
    BOM,
    HASH_BYTES,
    decode_parts,
    decode_wire,
    load_line,
    with_hint,
)
from mini_harness.transcripts.upcast import UPCASTERS, Upcaster, Upcasters, read_header

NEWLINE = ord("\n")
STDIN = "-"
"""The path that names standard input."""
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
            yield LongLine(len(raw), None, None)  # line 1 is a header: the reader refuses it
            return
        if raw.startswith(BOM):
            self.bom = True
            raw = raw[len(BOM) :]
        while raw:
            yield self._gather(raw) if len(raw) == _CHUNK and raw[-1:] != b"\n" else raw
            raw = readline(_CHUNK)

    def _gather(self, first: bytes) -> bytes | LongLine:
        """A line longer than one chunk: joined if it ends within the bound; else counted
        and hashed to its end as it streams by (only in a file: a pipe or a device may never
        end, so there reading stops), each piece held no longer than hashing it takes."""
        pieces = [first]
        size = len(first)
        while size <= MAX_LINE_BYTES and pieces[-1][-1:] != b"\n" and len(pieces[-1]) == _CHUNK:
            pieces.append(self.handle.readline(_CHUNK))
            size += len(pieces[-1])
        if size <= MAX_LINE_BYTES:
            return b"".join(pieces)
        hasher = hashlib.sha256()
        length = 0
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


class TranscriptRecord(msgspec.Struct, gc=False):
    """One line of a transcript: where it is, its envelope and its event.

    A msgspec Struct, not tracked by the cycle collector: one is made per line of files
    with millions of lines, and it holds only numbers, strings and its (declared, equally
    untracked) event, so it is never part of a cycle. Treat it as read-only.
    """

    line: int  # 1-based
    offset: int  # byte offset of the line's first byte
    seq: int
    prev: str | None
    hash: str  # what the next line must carry in `prev`
    event: Event


@attrs.frozen
class DamagedLine:
    """A bad line with good lines after it (only kept when reading with salvage=True)."""

    line: int
    offset: int
    length: int
    reason: str

    def describe(self) -> str:
        return f"line {self.line} (byte {self.offset}) is damaged: {self.reason}"


@attrs.frozen
class TornTail(DamagedLine):
    """Bytes after the last good line that do not form an event: a crash mid-write."""

    sha256: str | None = None  # of the tail's bytes, streamed (never held)

    def describe(self) -> str:
        return (
            f"torn tail at line {self.line}, byte {self.offset}: {self.length} "
            f"{'byte' if self.length == 1 else 'bytes'} ({self.reason})"
        )


@attrs.frozen
class IntegrityProblem:
    """A line that decodes but breaks the chain: a seq out of order or a wrong `prev`."""

    line: int
    offset: int
    seq: int
    message: str


FOLLOW_POLL_SECONDS = 0.1
"""How often a followed transcript is looked at again while nothing new is written."""


class GrowingFile:
    """A file read as it is written (`tail -f`): `readline` waits for a whole line, and
    ends (returns what it has, b"" when nothing) once `more()` says nothing more is
    coming. Only whole lines are handed on, so a line being written is never read torn."""

    def __init__(self, handle: BinaryIO, more: Callable[[], bool]) -> None:
        self.handle = handle
        self.more = more

    def __enter__(self) -> GrowingFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.handle.close()

    def readline(self, size: int = -1) -> bytes:
        start = self.handle.tell()
        while True:
            line = self.handle.readline(size)
            if line.endswith(b"\n") or (size > 0 and len(line) >= size):
                return line
            if not self.more():
                return line
            self.handle.seek(start)  # a line still being written: read it again whole
            time.sleep(FOLLOW_POLL_SECONDS)


class TranscriptReader:
    """Iterate a transcript's records in order, in bounded memory.

    `path` is a file, a FIFO or other stream (read once, front to back), or "-" for
    standard input. Raises TranscriptCorruptError for an undecodable line with good lines
    after it and TranscriptFormatError for a file that is not a transcript (or is of a
    newer format, or has CRLF line endings, or is a stream with no first line). An
    undecodable tail with nothing valid after it is not raised: it is kept in `torn_tail`.
    Chain problems (seq, prev) are collected in `problems`; `empty` says a regular file had
    no byte at all.

    `salvage=True` (used by verify) reads past mid-file damage instead: each bad line is
    kept in `damaged` and the chain is checked again from the next good line. A UTF-8 BOM
    before line 1 is skipped and reported in `bom`. Lines of an older format version are
    upcast with `upcasters` before they are typed.

    With `follow`, a regular file is read as it is written: at its end the reader waits
    for more lines while `follow()` is true (`show --follow`).
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        salvage: bool = False,
        upcasters: Upcasters = UPCASTERS,
        follow: Callable[[], bool] | None = None,
    ) -> None:
        self.path = Path(path)
        self.name = "standard input" if os.fspath(path) == STDIN else str(path)
        self.torn_tail: TornTail | None = None
        self.problems: list[IntegrityProblem] = []
        self.damaged: list[DamagedLine] = []
        self.bom = False
        self.empty = False
        self.header: TranscriptStarted | None = None
        self.head_hash: str | None = None
        # The full SHA-256 of the last line read: while iterating, that of the record
        # just yielded (head_hash is its first 128 bits).
        self.head_digest: bytes | None = None
        self.records_read = 0
        # Where the records read so far end: the byte after the last one's line (while
        # iterating, the one just yielded). A resume that planned from them claims the run
        # from there (transcripts/claim.py).
        self.end = 0
        self._salvage = salvage
        self._upcasters = upcasters
        self._follow = follow

    def __repr__(self) -> str:
        return f"<TranscriptReader(path={self.name!r}, records_read={self.records_read})>"

    def __iter__(self) -> Iterator[TranscriptRecord]:
        handle, regular = self._open()
        with handle if handle is not sys.stdin.buffer else contextlib.nullcontext():
            try:
                yield from self._records(BoundedLines(handle, regular=regular))
            except OSError as exc:
                raise self.unreadable(exc) from None
        if self.records_read == 0 and self.torn_tail is None and not self.damaged:
            if not regular:
                raise self._not_a_transcript("it has no first line")
            self.empty = True

    def _open(self) -> tuple[BinaryIO, bool]:
        """The stream to read and whether it is a regular file (which always ends)."""
        try:
            if os.fspath(self.path) == STDIN:
                handle: BinaryIO = sys.stdin.buffer
            else:
                handle = self.path.open("rb")
        except OSError as exc:
            raise self.unreadable(exc) from None
        try:
            regular = stat.S_ISREG(os.fstat(handle.fileno()).st_mode)
        except (OSError, ValueError):  # io.UnsupportedOperation: a stream without a descriptor
            regular = False
        if self._follow is not None and regular:
            # A growing file reads as a stream: its end is not known until it stops.
            return cast(BinaryIO, GrowingFile(handle, self._follow)), False
        return handle, regular

    def unreadable(self, exc: OSError) -> TranscriptError:
        """The error for a failed open or read of the file (a read that fails mid-file, on a
        failing disk or a vanished network mount, is as much a usage error as a missing
        file: the transcript cannot be read)."""
        return TranscriptError(
            str(self.path), f"cannot read transcript {self.name}: {exc.strerror or exc}"
        )

    def _not_a_transcript(self, why: str) -> TranscriptFormatError:
        return TranscriptFormatError(
            str(self.path), f"{self.name} is not a mini-harness transcript ({why})"
        )

    def _records(self, lines: BoundedLines) -> Iterator[TranscriptRecord]:  # noqa: PLR0915
        # This loop runs once per line of files with millions of lines: the common case is
        # a few comparisons, and a bad line goes to code of its own.
        sha256 = hashlib.sha256
        upcast = None
        expected_seq = 0
        prev_hash: str | None = None
        offset = 0
        number = 0
        # Bad lines not yet known to be mid-file, and the hash of the bytes from the first.
        pending: list[DamagedLine] = []

        def bad(number: int, start: int, hasher: Any, length: int, reason: str) -> None:
            # Takes the line's number and start: were they read from the loop's scope, the
            # loop would keep them in cells, slower to update on every line.
            if not pending:
                lines.tap = hasher
            pending.append(DamagedLine(number, start, length, reason))

        for raw in lines:
            number += 1
            start = offset
            if isinstance(raw, LongLine):
                offset += raw.length
                if number == 1:
                    raise self._not_a_transcript(f"line 1 is longer than {HEADER_LINE_BYTES} bytes")
                if raw.terminated is None:
                    raise TranscriptFormatError(
                        str(self.path),
                        f"{self.name}: line {number} (byte {start}) is longer than "
                        f"{MAX_LINE_BYTES} bytes; {self.name} is not a regular file, so "
                        "reading stops here",
                    )
                reason = "no newline at end of file"
                bad(
                    number,
                    start,
                    raw.hasher,
                    raw.length,
                    f"longer than {MAX_LINE_BYTES} bytes" if raw.terminated else reason,
                )
                continue
            if number == 1 and lines.bom:
                self.bom = True
                start = offset = len(BOM)
            offset += len(raw)
            if pending:  # a torn tail may be under way: lines.tap hashes it whole
                lines.tap.update(raw)
            if raw[-1] != NEWLINE:  # raw is never empty
                bad(number, start, sha256(raw), len(raw), "no newline at end of file")
                break
            body = raw[:-1]
            if body[-1:] == b"\r":
                raise TranscriptFormatError(
                    str(self.path),
                    f"{self.name}: line {number} ends with CRLF: the file was converted to "
                    "Windows line endings; transcripts use \\n only (convert it back, e.g. "
                    "with dos2unix, and verify it)",
                )
            try:
                if number == 1:
                    upcast = self._header(body)
                if upcast is None:
                    seq, prev, event = decode_parts(body)
                else:
                    seq, prev, event = decode_wire(upcast(load_line(body)))
            except DecodeError as exc:
                bad(number, start, sha256(raw), len(raw), with_hint(str(exc), body))
                continue
            if pending:  # not checked against the line before: the chain restarts here
                if not self._salvage:
                    first = pending[0]
                    raise TranscriptCorruptError(
                        str(self.path),
                        f"{self.name}: line {first.line} (byte {first.offset}) is damaged: "
                        f"{first.reason}; valid lines follow it",
                        line=first.line,
                        offset=first.offset,
                    )
                # Damage is reported once, as damage; the chain restarts at this good line.
                self.damaged.extend(pending)
                pending.clear()
                lines.tap = None
            elif number > 1:
                if seq != expected_seq:
                    message = f"seq {seq}, expected {expected_seq}"
                    self.problems.append(IntegrityProblem(number, start, seq, message))
                if prev != prev_hash:
                    message = (
                        "prev is missing"
                        if prev is None
                        else "prev does not match the hash of the line before"
                    )
                    self.problems.append(IntegrityProblem(number, start, seq, message))
            digest = sha256(body).digest()
            prev_hash = digest[:HASH_BYTES].hex()  # line_hash(body), inlined
            expected_seq = seq + 1
            self.records_read += 1
            self.end = offset
            self.head_hash = prev_hash
            self.head_digest = digest
            if number == 1 and isinstance(event, TranscriptStarted):
                self.header = event
            yield TranscriptRecord(number, start, seq, prev, prev_hash, event)
        if pending:
            first = pending[0]
            length = offset - first.offset
            self.torn_tail = TornTail(
                first.line, first.offset, length, first.reason, lines.tap.hexdigest()
            )

    def _header(self, body: bytes) -> Upcaster | None:
        """Line 1: check it is a transcript of a version we can read; the upcaster it needs."""
        try:
            return read_header(body, self._upcasters)
        except HeaderError as exc:
            if exc.version is None:
                raise self._not_a_transcript(exc.why) from None
            if exc.version > FORMAT_VERSION:
                why = (
                    f"; this mini-harness reads up to version {FORMAT_VERSION}: upgrade "
                    "mini-harness to read it"
                )
            else:
                why = ", which this mini-harness cannot upcast to the current version"
            raise TranscriptFormatError(
                str(self.path), f"{self.name} uses transcript format version {exc.version}{why}"
            ) from None


def read_transcript(path: str | os.PathLike[str]) -> list[TranscriptRecord]:
    """All records of a (small) transcript; see TranscriptReader for the errors."""
    return list(TranscriptReader(path))
