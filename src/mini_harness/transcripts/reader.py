"""Streaming transcript reader: typed events, chain checks, torn tails told apart from damage."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

import attrs

from mini_harness.errors import TranscriptCorruptError, TranscriptError, TranscriptFormatError
from mini_harness.runtime.events import (
    FORMAT_VERSION,
    TRANSCRIPT_FORMAT,
    Event,
    TranscriptStarted,
)
from mini_harness.transcripts.codec import DecodeError, decode_line, line_hash


@attrs.frozen
class TranscriptRecord:
    """One line of a transcript: where it is, its envelope and its event."""

    line: int  # 1-based
    offset: int  # byte offset of the line's first byte
    seq: int
    prev: str | None
    hash: str  # what the next line must carry in `prev`
    event: Event


@attrs.frozen
class TornTail:
    """Bytes after the last good line that do not form an event: a crash mid-write."""

    line: int
    offset: int
    length: int
    reason: str

    def describe(self) -> str:
        return (
            f"torn tail at line {self.line}, byte {self.offset}: {self.length} bytes "
            f"({self.reason})"
        )


@attrs.frozen
class IntegrityProblem:
    """A line that decodes but breaks the chain: a seq out of order or a wrong `prev`."""

    line: int
    offset: int
    seq: int
    message: str


class TranscriptReader:
    """Iterate a transcript's records in order, in constant memory.

    Raises TranscriptCorruptError for an undecodable line with good lines after it and
    TranscriptFormatError for a file that is not a transcript (or is of a newer format).
    An undecodable tail with nothing valid after it is not raised: it is kept in
    `torn_tail`. Chain problems (seq, prev) are collected in `problems`.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.torn_tail: TornTail | None = None
        self.problems: list[IntegrityProblem] = []
        self.header: TranscriptStarted | None = None
        self.head_hash: str | None = None
        self.records_read = 0

    def __iter__(self) -> Iterator[TranscriptRecord]:
        try:
            handle = self.path.open("rb")
        except OSError as exc:
            raise TranscriptError(
                str(self.path), f"cannot read transcript {self.path}: {exc.strerror}"
            ) from None
        with handle:
            yield from self._records(handle)

    def _records(self, handle: BinaryIO) -> Iterator[TranscriptRecord]:
        offset = 0
        expected_seq = 0
        prev_hash: str | None = None
        for number, raw in enumerate(handle, start=1):
            start = offset
            offset += len(raw)
            if not raw.endswith(b"\n"):
                self.torn_tail = TornTail(number, start, len(raw), "no newline at end of file")
                return
            body = raw[:-1]
            try:
                decoded = decode_line(body)
            except DecodeError as exc:
                self._bad_line(handle, number, start, len(raw), str(exc))
                return
            if number == 1:
                self._check_header(decoded.event)
            elif decoded.seq != expected_seq:
                self.problems.append(
                    IntegrityProblem(
                        number, start, decoded.seq, f"seq {decoded.seq}, expected {expected_seq}"
                    )
                )
            if number > 1 and decoded.prev != prev_hash:
                message = (
                    "prev is missing"
                    if decoded.prev is None
                    else "prev does not match the hash of the line before"
                )
                self.problems.append(IntegrityProblem(number, start, decoded.seq, message))
            prev_hash = line_hash(body)
            expected_seq = decoded.seq + 1
            self.records_read += 1
            self.head_hash = prev_hash
            yield TranscriptRecord(
                line=number,
                offset=start,
                seq=decoded.seq,
                prev=decoded.prev,
                hash=prev_hash,
                event=decoded.event,
            )

    def _check_header(self, event: Event) -> None:
        if not isinstance(event, TranscriptStarted) or event.format != TRANSCRIPT_FORMAT:
            raise TranscriptFormatError(
                str(self.path),
                f"{self.path} is not a mini-harness transcript (line 1 is not TranscriptStarted)",
            )
        if event.version > FORMAT_VERSION:
            raise TranscriptFormatError(
                str(self.path),
                f"{self.path} uses transcript format version {event.version}; this mini-harness "
                f"reads up to version {FORMAT_VERSION}: upgrade mini-harness to read it",
            )
        self.header = event

    def _bad_line(
        self, handle: BinaryIO, number: int, start: int, length: int, reason: str
    ) -> None:
        """Decide whether a bad line is a torn tail (nothing valid after it) or damage."""
        if number == 1 and length > 0:
            # Unless the file is nothing but one unterminated fragment (handled by the
            # caller), a first line that is not an event means this is not a transcript.
            raise TranscriptFormatError(
                str(self.path), f"{self.path} is not a mini-harness transcript (line 1: {reason})"
            )
        tail_length = length
        for later in handle:
            if later.endswith(b"\n"):
                try:
                    decode_line(later[:-1])
                except DecodeError:
                    tail_length += len(later)
                    continue
                raise TranscriptCorruptError(
                    str(self.path),
                    f"{self.path}: line {number} (byte {start}) is damaged: {reason}; "
                    "valid lines follow it",
                    line=number,
                    offset=start,
                )
            tail_length += len(later)
        self.torn_tail = TornTail(number, start, tail_length, reason)


def read_transcript(path: str | os.PathLike[str]) -> list[TranscriptRecord]:
    """All records of a (small) transcript; see TranscriptReader for the errors."""
    return list(TranscriptReader(path))
