"""Verify a transcript: JSON, seq, the prev chain, the call protocol, in-doubt calls.

The transcript is read by the one log fold (log_fold.py), which checks the chain, the call
protocol and the agent runs' protocol as the history fold does; this module says what it
found, and whether the chain reaches a given head or signed head.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator

import attrs

from mini_harness.errors import counted
from mini_harness.events import JsonObject, JsonValue
from mini_harness.transcripts.head_note import SignedHead
from mini_harness.transcripts.log_fold import (
    LogFold,
    OpenCall,
    ProtocolProblem,
    UnfinishedRun,
)
from mini_harness.transcripts.reader import (
    DamagedLine,
    IntegrityProblem,
    TornTail,
    TranscriptReader,
    TranscriptRecord,
)
from mini_harness.transcripts.upcast import UPCASTERS, Upcasters


@attrs.frozen
class VerifyReport:
    """Everything verify found. `ok` is True when there is nothing to report as a problem.

    Unknown event types (of the same major version) are notices, not problems: they are
    kept, and a newer mini-harness may know them.
    """

    path: str
    transcript_id: str | None
    version: int | None
    lines: int
    last_seq: int | None
    runs: int
    calls: int
    head_hash: str | None
    bom: bool
    torn_tail: TornTail | None
    damaged: tuple[DamagedLine, ...]
    integrity: tuple[IntegrityProblem, ...]
    protocol: tuple[ProtocolProblem, ...]
    in_doubt: tuple[OpenCall, ...]
    agent_in_doubt: tuple[str, ...]  # agent runs without RunFinished, requests unanswered
    unknown_types: tuple[tuple[str, int], ...]
    empty: bool = False
    unfinished_runs: tuple[UnfinishedRun, ...] = ()
    failed: int = 0  # calls that ended with ToolFailed
    expected_head: str | None = None  # the head hash the chain must reach, if given
    head_line: int | None = None  # the line whose hash is expected_head, if reached
    head_sha256: str | None = None  # the full SHA-256 of the last line
    last_line: int | None = None  # the line number of the last line
    signed: SignedHead | None = None  # the signed head the file must end with, if given
    signed_line: int | None = None  # the first line with the signed head's seq
    signed_line_sha256: str | None = None  # that line's full SHA-256

    @property
    def ok(self) -> bool:
        return not self.problems()

    def problems(self) -> list[str]:
        """One line per problem, in file order within each kind."""
        out = self.damage()
        out += [
            f"line {c.line} (seq {c.seq}): call {c.call_id} ({c.name}) is in doubt: "
            "ToolCalled without a terminal event"
            for c in self.in_doubt
        ]
        out += self.agent_in_doubt
        if self.torn_tail is not None:
            out.append(self.torn_tail.describe())
        if self.expected_head is not None and self.head_line is None:
            out.append(
                f"the chain does not reach head {self.expected_head}: no line has that hash "
                "(the file was edited or cut since the head was recorded)"
            )
        out += self.signed_head_problems()
        return out

    def signed_head_problems(self) -> list[str]:
        """What keeps the file from ending with the signed head: a note no trusted key
        signed, another transcript's note, a file cut before the signed line, a signed line
        that differs, lines after it (which no signature covers). One problem at most."""
        signed = self.signed
        if signed is None:
            return []
        if signed.claim is None:
            return [signed.refused or f"{signed.note} was refused"]
        claim = signed.claim
        if claim.transcript_id != self.transcript_id:
            return [
                f"{signed.note} signs the head of transcript {claim.transcript_id}, not of "
                f"this one ({self.transcript_id})"
            ]
        if self.signed_line is None:
            ends = "has no line" if self.last_seq is None else f"ends at seq {self.last_seq}"
            return [
                f"the file {ends}, before the signed head at seq {claim.seq}: it was cut "
                "after the head was signed"
            ]
        if self.signed_line_sha256 != claim.sha256:
            return [
                f"line {self.signed_line} (seq {claim.seq}) is not the line that was signed: "
                f"its SHA-256 is {self.signed_line_sha256}, the signed one's {claim.sha256} "
                "(the history up to the signed head was rewritten after it was signed)"
            ]
        after = (self.last_line or 0) - self.signed_line
        if after > 0:
            verb = "is" if after == 1 else "are"
            return [
                f"{counted(after, 'line')} after the signed head (line {self.signed_line}, "
                f"seq {claim.seq}) {verb} covered by no signature: written after it was signed"
            ]
        return []

    @property
    def signed_head_reached(self) -> bool:
        """Whether the line at the signed head's seq is the signed line."""
        claim = None if self.signed is None else self.signed.claim
        return claim is not None and self.signed_line_sha256 == claim.sha256

    def damage(self) -> list[str]:
        """The problems a crash does not leave (it leaves calls, requests and runs in doubt,
        and a torn tail): damaged or edited lines, a broken chain, a broken call protocol.
        What is said here makes the history unfit to act on (resume, fork, undo)."""
        return _damage(self.empty, self.bom, self.damaged, self.integrity, self.protocol)

    def notices(self) -> list[str]:
        return [
            f"{counted(count, 'event')} of unknown type {name} kept "
            "(written by a newer mini-harness?)"
            for name, count in self.unknown_types
        ]

    def to_json(self) -> JsonObject:
        return {
            "path": self.path,
            "ok": self.ok,
            "transcriptId": self.transcript_id,
            "version": self.version,
            "lines": self.lines,
            "lastSeq": self.last_seq,
            "runs": self.runs,
            "calls": self.calls,
            "failed": self.failed,
            "headHash": self.head_hash,
            "expectedHead": self.expected_head,
            "headReached": None if self.expected_head is None else self.head_line is not None,
            "headSha256": self.head_sha256,
            "signedHead": self._signed_json(),
            "problems": self.problems(),
            "notices": self.notices(),
            "tornTail": None
            if self.torn_tail is None
            else {"offset": self.torn_tail.offset, "length": self.torn_tail.length},
            "inDoubt": [
                {"callId": c.call_id, "name": c.name, "runId": c.run_id, "seq": c.seq}
                for c in self.in_doubt
            ],
        }

    def _signed_json(self) -> JsonValue:
        signed = self.signed
        if signed is None:
            return None
        claim = signed.claim
        if claim is None:
            return {"note": signed.note, "refused": signed.refused}
        return {
            "note": signed.note,
            "transcriptId": claim.transcript_id,
            "seq": claim.seq,
            "sha256": claim.sha256,
            "time": claim.time,
            "signedBy": list[JsonValue](signed.signers),
            "reached": self.signed_head_reached,
            "line": self.signed_line,
        }


class _Verification(LogFold):
    """The log fold, watching for the line with the expected head's hash and the line at
    the signed head's seq."""

    def __init__(self, reader: TranscriptReader, head: str | None, signed_seq: int | None):
        super().__init__(reader)
        self.source = reader
        self.head = head
        self.signed_seq = signed_seq
        self.head_line: int | None = None
        self.signed_line: int | None = None
        self.signed_sha256: str | None = None
        self.last: TranscriptRecord | None = None

    def __iter__(self) -> Iterator[object]:
        return self._fold(self._watched())

    def _watched(self) -> Iterator[TranscriptRecord]:
        reader = self.source
        for record in reader:
            if record.hash == self.head:
                self.head_line = record.line
            if record.seq == self.signed_seq and self.signed_line is None:
                self.signed_line = record.line
                digest = reader.head_digest
                self.signed_sha256 = digest.hex() if digest else None
            self.last = record
            yield record


def _damage(
    empty: bool,
    bom: bool,
    damaged: Iterable[DamagedLine],
    integrity: Iterable[IntegrityProblem],
    protocol: Iterable[ProtocolProblem],
) -> list[str]:
    out: list[str] = []
    if empty:
        out.append("the file is empty: a transcript starts with its TranscriptStarted line")
    if bom:
        out.append("the file starts with a UTF-8 byte order mark (written by another tool)")
    out += [d.describe() for d in damaged]
    out += [f"line {p.line} (seq {p.seq}, byte {p.offset}): {p.message}" for p in integrity]
    out += [p.describe() for p in protocol]
    return out


def damage_read(reader: TranscriptReader, fold: LogFold) -> list[str]:
    """What `VerifyReport.damage()` says of the transcript `reader` read (salvaging past
    damage) through `fold`, once `fold` has read it all: for a reader that folds it into
    more than verify does, and so checks it in the same reading (resume and fork)."""
    integrity = sorted([*reader.problems, *fold.misplaced], key=lambda p: p.line)
    return _damage(reader.empty, reader.bom, reader.damaged, integrity, fold.protocol.problems)


def verify_transcript(
    path: str | os.PathLike[str],
    *,
    upcasters: Upcasters = UPCASTERS,
    head: str | None = None,
    signed: SignedHead | None = None,
) -> VerifyReport:
    """Read the whole transcript (salvaging past damage) and check it.

    With `head` (a hash kept elsewhere, e.g. printed by an earlier verify), the chain must
    reach it: some line must have exactly that hash, else the file was edited or cut.
    With `signed` (a signed head whose signature was checked), the file must end with the
    signed line: the line at its seq has its SHA-256, and no line follows it.
    Raises TranscriptError (a subclass of it) only when the file cannot be read as a
    transcript at all: missing, not a transcript, a newer format version, CRLF endings.
    """
    reader = TranscriptReader(path, salvage=True, upcasters=upcasters)
    signed_seq = None if signed is None or signed.claim is None else signed.claim.seq
    fold = _Verification(reader, head, signed_seq)
    for _item in fold:
        pass
    header = reader.header
    last = fold.last
    # In file order; a line's chain problems before its misplaced header (damage_read too).
    integrity = sorted([*reader.problems, *fold.misplaced], key=lambda p: p.line)
    return VerifyReport(
        path=reader.name,
        transcript_id=header.transcript_id if header else None,
        version=header.version if header else None,
        lines=reader.records_read,
        last_seq=None if last is None else last.seq,
        runs=fold.runs_started,
        calls=fold.calls,
        failed=fold.failed,
        head_hash=reader.head_hash,
        bom=reader.bom,
        torn_tail=reader.torn_tail,
        damaged=tuple(reader.damaged),
        integrity=tuple(integrity),
        protocol=tuple(fold.protocol.problems),
        in_doubt=tuple(fold.protocol.in_doubt()),
        agent_in_doubt=tuple(
            f"line {o.line} (seq {o.seq}): {o.message()}" for o in fold.agent_protocol.in_doubt()
        ),
        unknown_types=tuple(sorted(fold.unknown.items())),
        empty=reader.empty,
        unfinished_runs=tuple(fold.agent_protocol.unfinished()),
        expected_head=head,
        head_line=fold.head_line,
        head_sha256=reader.head_digest.hex() if reader.head_digest else None,
        last_line=None if last is None else last.line,
        signed=signed,
        signed_line=fold.signed_line,
        signed_line_sha256=fold.signed_sha256,
    )
