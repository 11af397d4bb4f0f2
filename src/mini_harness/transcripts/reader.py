"""Streaming transcript reader: typed events, chain checks, torn tails told apart from damage."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, BinaryIO, TypeAlias

import attrs

from mini_harness.errors import TranscriptCorruptError, TranscriptError, TranscriptFormatError
from mini_harness.events import (
    FORMAT_VERSION,
    TRANSCRIPT_FORMAT,
    Event,
    JsonObject,
    TranscriptStarted,
)
from mini_harness.transcripts.codec import (
    HASH_BYTES,
    DecodeError,
    WireLine,
    check_fields,
    decode_line,
    parse_line,
    parse_raw,
    wire_to_event,
)
from mini_harness.transcripts.upcast import UPCASTERS, Upcaster, Upcasters

BOM = b"\xef\xbb\xbf"

# One line on the raw path: (line, offset, seq, prev, hash, data). `line` is 1-based,
# `offset` the byte offset of its first byte, `hash` what the next line must carry in
# `prev`, `data` the line's parsed JSON object (upcast to the current format version).
# A plain tuple: one is made per line, and a NamedTuple costs several times more to build.
RawRecord: TypeAlias = tuple[int, int, int, str | None, str, JsonObject]

# Decodes one line (without its newline) to (seq, prev, payload); raises DecodeError.
_Decoder: TypeAlias = Callable[[bytes], tuple[int, str | None, Any]]


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
            f"torn tail at line {self.line}, byte {self.offset}: {self.length} "
            f"{'byte' if self.length == 1 else 'bytes'} "
            f"({self.reason})"
        )


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
class IntegrityProblem:
    """A line that decodes but breaks the chain: a seq out of order or a wrong `prev`."""

    line: int
    offset: int
    seq: int
    message: str


class TranscriptReader:
    """Iterate a transcript's records in order, in constant memory.

    Raises TranscriptCorruptError for an undecodable line with good lines after it and
    TranscriptFormatError for a file that is not a transcript (or is of a newer format, or
    has CRLF line endings). An undecodable tail with nothing valid after it is not raised:
    it is kept in `torn_tail`. Chain problems (seq, prev) are collected in `problems`.

    `salvage=True` (used by verify) reads past mid-file damage instead: each bad line is
    kept in `damaged` and the chain is checked again from the next good line. A UTF-8 BOM
    before line 1 is skipped and reported in `bom`. Lines of an older format version are
    upcast with `upcasters` before they are typed.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        salvage: bool = False,
        upcasters: Upcasters = UPCASTERS,
    ) -> None:
        self.path = Path(path)
        self.torn_tail: TornTail | None = None
        self.problems: list[IntegrityProblem] = []
        self.damaged: list[DamagedLine] = []
        self.bom = False
        self.header: TranscriptStarted | None = None
        self.head_hash: str | None = None
        self.records_read = 0
        self._salvage = salvage
        self._upcasters = upcasters
        self._decode: Callable[[bytes], WireLine] = decode_line
        self._upcast: Upcaster | None = None

    def __iter__(self) -> Iterator[TranscriptRecord]:
        for number, start, seq, prev, hash_, event in self._scan(self._typed):
            yield TranscriptRecord(number, start, seq, prev, hash_, event)

    def raw(self) -> Iterator[RawRecord]:
        """Like iterating, but yield each line's parsed JSON object instead of a typed event.

        The same torn-tail, damage and chain checks apply; a line counts as decodable when
        its envelope and the fields of its (known) type have the right JSON types. This is
        the fast path for folding large transcripts.
        """
        return self._scan(self._raw)

    def _typed(self, body: bytes) -> tuple[int, str | None, Event]:
        decoded = self._decode(body)
        return decoded.seq, decoded.prev, decoded.event

    def _raw(self, body: bytes) -> tuple[int, str | None, JsonObject]:
        if self._upcast is None:
            data = parse_raw(body)
        else:
            data = _upcast_line(self._upcast, parse_line(body))
            check_fields(data)
        return data["seq"], data.get("prev"), data

    def _scan(self, decode: _Decoder) -> Iterator[Any]:
        """The one implementation behind both iterators: decode, classify damage, check chain."""
        handle, offset = self.open()
        with handle:
            try:
                yield from self._records(handle, handle, decode, 1, offset, 0, None)
            except OSError as exc:
                raise self.unreadable(exc) from None

    def open(self) -> tuple[BinaryIO, int]:
        """Open the file for reading lines, past a UTF-8 BOM: (handle, offset of line 1).

        Raises TranscriptError if the file cannot be read. For readers of their own that take
        the common lines themselves and hand the others to `resume`.
        """
        try:
            handle = self.path.open("rb")
        except OSError as exc:
            raise self.unreadable(exc) from None
        try:
            if handle.read(len(BOM)) == BOM:
                self.bom = True
                return handle, len(BOM)
            handle.seek(0)
        except OSError as exc:
            handle.close()
            raise self.unreadable(exc) from None
        return handle, 0

    def unreadable(self, exc: OSError) -> TranscriptError:
        """The error for a failed open or read of the file (a read that fails mid-file, on a
        failing disk or a vanished network mount, is as much a usage error as a missing
        file: the transcript cannot be read)."""
        return TranscriptError(
            str(self.path), f"cannot read transcript {self.path}: {exc.strerror or exc}"
        )

    @property
    def upcasting(self) -> bool:
        """Whether lines are upcast from an older format version (known after line 1)."""
        return self._upcast is not None

    def resume(
        self,
        lines: Iterable[bytes],
        rest: Iterable[bytes],
        *,
        line: int,
        offset: int,
        seq: int,
        prev: str | None,
    ) -> Iterator[RawRecord]:
        """The raw path (see `raw`) over `lines`, from a reading state built elsewhere.

        `line` and `offset` are those of the first of `lines`, `seq` and `prev` what it
        must carry; `rest` is the rest of the file, read to tell a torn tail from damage.
        All checks and counts (`records_read`, `head_hash`, problems) are this reader's,
        as if it had read every line before itself: a caller that reads the common lines
        itself keeps those counts up to date before handing a line over.
        """
        return self._records(lines, rest, self._raw, line, offset, seq, prev)

    def _records(  # noqa: PLR0917 - internal, the state of one loop
        self,
        lines: Iterable[bytes],
        rest: Iterable[bytes],
        decode: _Decoder,
        first_line: int,
        offset: int,
        expected_seq: int,
        prev_hash: str | None,
    ) -> Iterator[Any]:
        # This loop runs once per line of files with millions of lines: the common case is
        # a few comparisons, and every problem goes to code of its own.
        sha256 = hashlib.sha256
        pending: list[DamagedLine] = []  # salvage: bad lines not yet known to be mid-file
        for number, raw in enumerate(lines, start=first_line):
            start = offset
            offset += len(raw)
            if not raw.endswith(b"\n"):
                self.torn_tail = _torn(
                    pending, number, start, len(raw), "no newline at end of file"
                )
                return
            body = raw[:-1]
            if body.endswith(b"\r"):
                raise TranscriptFormatError(
                    str(self.path),
                    f"{self.path}: line {number} ends with CRLF: the file was converted to "
                    "Windows line endings; transcripts use \\n only (convert it back, e.g. "
                    "with dos2unix, and verify it)",
                )
            try:
                if number == 1:
                    self._decode_header(body)
                seq, prev, payload = decode(body)
            except DecodeError as exc:
                reason = _with_hint(str(exc), body)
                if self._salvage:
                    pending.append(DamagedLine(number, start, len(raw), reason))
                    continue
                self._bad_line(rest, decode, number, start, len(raw), reason)
                return
            checked = not pending
            if pending:
                # Damage is reported once, as damage; the chain restarts at the next good line.
                self.damaged.extend(pending)
                pending.clear()
            if (seq != expected_seq or prev != prev_hash) and number > 1 and checked:
                self._chain_problem(number, start, seq, prev, expected_seq, prev_hash)
            prev_hash = sha256(body).digest()[:HASH_BYTES].hex()  # line_hash(body), inlined
            expected_seq = seq + 1
            self.records_read += 1
            self.head_hash = prev_hash
            yield number, start, seq, prev, prev_hash, payload
        if pending:
            first = pending[0]
            self.torn_tail = _torn(
                pending[1:], first.line, first.offset, first.length, first.reason
            )

    def _chain_problem(  # noqa: PLR0917 - internal, the slow path of one loop
        self,
        number: int,
        start: int,
        seq: int,
        prev: str | None,
        expected_seq: int,
        prev_hash: str | None,
    ) -> None:
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

    def _decode_header(self, body: bytes) -> WireLine:
        """Line 1: check it is a transcript of a version we can read, and pick the decoder."""

        def refuse(why: str) -> TranscriptFormatError:
            return TranscriptFormatError(
                str(self.path), f"{self.path} is not a mini-harness transcript ({why})"
            )

        try:
            data = parse_line(body)
        except DecodeError as exc:
            raise refuse(f"line 1: {_with_hint(str(exc), body)}") from None
        version = data.get("version")
        if data["type"] != "TranscriptStarted" or data.get("format") != TRANSCRIPT_FORMAT:
            raise refuse("line 1 is not TranscriptStarted")
        if type(version) is not int:
            raise refuse("line 1 has no format version")
        if version > FORMAT_VERSION:
            raise TranscriptFormatError(
                str(self.path),
                f"{self.path} uses transcript format version {version}; this mini-harness "
                f"reads up to version {FORMAT_VERSION}: upgrade mini-harness to read it",
            )
        try:
            upcast = self._upcasters.chain(version)
        except LookupError:
            raise TranscriptFormatError(
                str(self.path),
                f"{self.path} uses transcript format version {version}, which this "
                "mini-harness cannot upcast to the current version",
            ) from None
        if upcast is not None:
            self._upcast = upcast
            self._decode = _upcasting_decoder(upcast, version)
        try:
            decoded = self._decode(body)
        except DecodeError as exc:
            raise refuse(f"line 1: {exc}") from None
        if not isinstance(decoded.event, TranscriptStarted):
            raise refuse("line 1 is not TranscriptStarted")
        self.header = decoded.event
        return decoded

    def _bad_line(  # noqa: PLR0917 - internal, called from one place
        self,
        rest: Iterable[bytes],
        decode: _Decoder,
        number: int,
        start: int,
        length: int,
        reason: str,
    ) -> None:
        """Decide whether a bad line is a torn tail (nothing valid after it) or damage."""
        tail_length = length
        for later in rest:
            if later.endswith(b"\n"):
                try:
                    decode(later[:-1])
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


def _torn(pending: list[DamagedLine], line: int, offset: int, length: int, reason: str) -> TornTail:
    """The torn tail starting at the first pending bad line, or at this line if none."""
    if not pending:
        return TornTail(line, offset, length, reason)
    first = pending[0]
    return TornTail(first.line, first.offset, offset + length - first.offset, first.reason)


def _with_hint(reason: str, body: bytes) -> str:
    """Say so when a bad line looks like a piece of pretty-printed JSON."""
    stripped = body.strip()
    if reason.startswith("not JSON") and (
        stripped in {b"{", b"[", b"}", b"]", b"},", b"],"} or body[:1] in {b" ", b"\t"}
    ):
        return (
            f"{reason}; it looks like pretty-printed JSON, but a transcript holds one compact "
            "JSON object per line"
        )
    return reason


def _upcast_line(upcast: Upcaster, data: JsonObject) -> JsonObject:
    try:
        return upcast(dict(data))
    except Exception as exc:  # an upcaster's failure is this line's failure, not ours
        raise DecodeError(f"cannot upcast to the current format: {exc!r}") from None


def _upcasting_decoder(upcast: Upcaster, version: int) -> Callable[[bytes], WireLine]:
    def decode(body: bytes) -> WireLine:
        data = parse_line(body)
        try:
            current = upcast(dict(data))
        except Exception as exc:  # an upcaster's failure is this line's failure, not ours
            raise DecodeError(f"cannot upcast from format version {version}: {exc!r}") from None
        return WireLine(seq=data["seq"], prev=data.get("prev"), event=wire_to_event(current))

    return decode


def read_transcript(path: str | os.PathLike[str]) -> list[TranscriptRecord]:
    """All records of a (small) transcript; see TranscriptReader for the errors."""
    return list(TranscriptReader(path))
