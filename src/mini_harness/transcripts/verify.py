"""Verify a transcript: JSON, seq, the prev chain, the call protocol, in-doubt calls."""

from __future__ import annotations

import os
from collections import Counter

import attrs

from mini_harness.errors import counted
from mini_harness.events import (
    JsonObject,
    ModelRequested,
    ModelResponded,
    RunFinished,
    RunStarted,
    ToolCalled,
    ToolFailed,
    ToolSucceeded,
    TranscriptStarted,
    UnknownEvent,
)
from mini_harness.transcripts.protocol import (
    CallProtocol,
    OpenCall,
    ProtocolProblem,
    RunProtocol,
)
from mini_harness.transcripts.reader import (
    DamagedLine,
    IntegrityProblem,
    TornTail,
    TranscriptReader,
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
    expected_head: str | None = None  # the head hash the chain must reach, if given
    head_line: int | None = None  # the line whose hash is expected_head, if reached

    @property
    def ok(self) -> bool:
        return not self.problems()

    def problems(self) -> list[str]:
        """One line per problem, in file order within each kind."""
        out: list[str] = []
        if self.empty:
            out.append("the file is empty: a transcript starts with its TranscriptStarted line")
        if self.bom:
            out.append("the file starts with a UTF-8 byte order mark (written by another tool)")
        out += [d.describe() for d in self.damaged]
        out += [
            f"line {p.line} (seq {p.seq}, byte {p.offset}): {p.message}" for p in self.integrity
        ]
        out += [p.describe() for p in self.protocol]
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
        return out

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
            "headHash": self.head_hash,
            "expectedHead": self.expected_head,
            "headReached": None if self.expected_head is None else self.head_line is not None,
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


def verify_transcript(
    path: str | os.PathLike[str],
    *,
    upcasters: Upcasters = UPCASTERS,
    head: str | None = None,
) -> VerifyReport:
    """Read the whole transcript (salvaging past damage) and check it.

    With `head` (a hash kept elsewhere, e.g. printed by an earlier verify), the chain must
    reach it: some line must have exactly that hash, else the file was edited or cut.
    Raises TranscriptError (a subclass of it) only when the file cannot be read as a
    transcript at all: missing, not a transcript, a newer format version, CRLF endings.
    """
    reader = TranscriptReader(path, salvage=True, upcasters=upcasters)
    protocol = CallProtocol()
    agent_runs = RunProtocol()
    unknown: Counter[str] = Counter()
    runs = calls = 0
    last_seq: int | None = None
    head_line: int | None = None
    for record in reader:
        if record.hash == head:
            head_line = record.line
        last_seq = record.seq
        event = record.event
        if isinstance(event, ToolCalled):
            calls += 1
            protocol.called(record.line, record.seq, event.run_id, event.call_id, event.name)
        elif isinstance(event, ToolSucceeded | ToolFailed):
            kind = type(event).__name__
            protocol.finished(
                record.line, record.seq, kind, event.call_id, event.run_id, event.name
            )
        elif isinstance(event, RunStarted):
            runs += 1
            agent_runs.feed(record.line, record.seq, event)
        elif isinstance(event, ModelRequested | ModelResponded | RunFinished):
            agent_runs.feed(record.line, record.seq, event)
        elif isinstance(event, UnknownEvent):
            unknown[event.type] += 1
        elif isinstance(event, TranscriptStarted) and record.line != 1:
            reader.problems.append(
                IntegrityProblem(
                    record.line, record.offset, record.seq, "TranscriptStarted after line 1"
                )
            )
    header = reader.header
    return VerifyReport(
        path=reader.name,
        transcript_id=header.transcript_id if header else None,
        version=header.version if header else None,
        lines=reader.records_read,
        last_seq=last_seq,
        runs=runs,
        calls=calls,
        head_hash=reader.head_hash,
        bom=reader.bom,
        torn_tail=reader.torn_tail,
        damaged=tuple(reader.damaged),
        integrity=tuple(reader.problems),
        protocol=tuple(protocol.problems),
        in_doubt=tuple(protocol.in_doubt()),
        agent_in_doubt=tuple(
            f"line {o.line} (seq {o.seq}): {o.message()}" for o in agent_runs.in_doubt()
        ),
        unknown_types=tuple(sorted(unknown.items())),
        empty=reader.empty,
        expected_head=head,
        head_line=head_line,
    )
