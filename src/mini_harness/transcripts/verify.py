"""Verify a transcript: JSON, seq, the prev chain, the call protocol, in-doubt calls.

The call protocol (every ToolCalled gets exactly one terminal event of the same run and
tool, and call ids are unique) and the agent runs' (each run and model request ends) are
checked by CallProtocol and RunProtocol, which the fold feeds too.
"""

from __future__ import annotations

import os
from collections import Counter

import attrs

from mini_harness.errors import counted
from mini_harness.events import (
    JsonObject,
    JsonValue,
    ModelRequested,
    ModelResponded,
    RunFinished,
    RunStarted,
    ToolCalled,
    ToolFailed,
    ToolSucceeded,
    TranscriptStarted,
    UnknownEvent,
    Usage,
)
from mini_harness.transcripts.head_note import SignedHead
from mini_harness.transcripts.reader import (
    DamagedLine,
    IntegrityProblem,
    TornTail,
    TranscriptReader,
)
from mini_harness.transcripts.upcast import UPCASTERS, Upcasters

AgentRunEvent = RunStarted | ModelRequested | ModelResponded | RunFinished


@attrs.frozen
class ProtocolProblem:
    """A line that breaks the call protocol, with where it is."""

    line: int
    seq: int
    call_id: str | None
    message: str

    def describe(self) -> str:
        return f"line {self.line} (seq {self.seq}): {self.message}"


@attrs.define
class OpenCall:
    """A ToolCalled seen without its terminal event (yet): in doubt if the log ends here.

    Not frozen: one is made per call while folding millions of events, and a frozen attrs
    class costs several times as much to build. Treat it as read-only.
    """

    line: int
    seq: int
    run_id: str
    call_id: str
    name: str


class CallProtocol:
    """Feed it the call events of a transcript in order; it collects protocol problems.

    Works on plain fields, for verify and the fold alike. Memory grows with the number of
    distinct call ids (to catch reuse), not with event size. `open_calls` (call id to its
    OpenCall, in the order they began) and `seen` (the ids of every call that began, open
    or ended) are the whole state.
    """

    def __init__(self) -> None:
        self.problems: list[ProtocolProblem] = []
        self.open_calls: dict[str, OpenCall] = {}
        # One set of every id, not one of ended calls: a new call costs one lookup and one
        # insert, and an ended call none (the ended ones are those not open).
        self.seen: set[str] = set()

    def called(self, line: int, seq: int, run_id: str, call_id: str, name: str) -> bool:
        """Record a ToolCalled; False (and a problem) if its call id was used before."""
        if call_id in self.seen:
            self.problems.append(
                ProtocolProblem(line, seq, call_id, f"callId {call_id} is used again")
            )
            return False
        self.seen.add(call_id)
        self.open_calls[call_id] = OpenCall(line, seq, run_id, call_id, name)
        return True

    def finished(  # noqa: PLR0917 - the fields of a terminal event, positional
        self, line: int, seq: int, kind: str, call_id: str, run_id: str, name: str
    ) -> OpenCall | None:
        """Record a terminal event; return the call it closes (None if it closes nothing).

        A terminal event whose run or tool differs from its ToolCalled's still ends the
        call (the call is as its ToolCalled recorded it), and is reported.
        """
        opened = self.open_calls.pop(call_id, None)
        if opened is None:
            ended = call_id in self.seen  # seen and not open: it ended
            message = f"{kind} for call {call_id}, which " + (
                "already ended" if ended else "has no ToolCalled"
            )
        elif run_id != opened.run_id:
            message = (
                f"{kind} for call {call_id} is in run {run_id}, but its ToolCalled "
                f"is in run {opened.run_id}"
            )
        elif name != opened.name:
            message = (
                f"{kind} for call {call_id} names tool {name}, but its ToolCalled "
                f"names {opened.name}"
            )
        else:
            return opened
        self.problems.append(ProtocolProblem(line, seq, call_id, message))
        return opened

    def in_doubt(self) -> list[OpenCall]:
        """Calls with a ToolCalled and no terminal event, in the order they began."""
        return list(self.open_calls.values())


@attrs.frozen
class OpenRun:
    """An agent run (a RunStarted with a task) or a model request not ended (yet)."""

    line: int
    seq: int
    run_id: str
    request_id: str | None = None  # None: the run itself

    def message(self) -> str:
        if self.request_id is not None:
            return (
                f"model request {self.request_id} of run {self.run_id} is in doubt: "
                "ModelRequested without a response"
            )
        return f"agent run {self.run_id} is unfinished: no RunFinished"


class RunProtocol:
    """Agent runs end: each one with RunFinished, each model request with a response or
    the end of its run. What is still open when the log ends is in doubt, as a call is.

    A run another run resumed (`resumedFrom` names it) has ended: it was continued.
    """

    def __init__(self) -> None:
        self.runs: dict[str, OpenRun] = {}
        self.requests: dict[str, OpenRun] = {}
        # What an open run did so far, for a repair that closes it: requests, usage.
        self.asked: dict[str, set[str]] = {}
        self.used: dict[str, Usage] = {}

    def feed(self, line: int, seq: int, event: AgentRunEvent) -> None:
        """Take an agent run's event, in file order (a RunStarted without a task, a CLI
        call's run, is not an agent run)."""
        if isinstance(event, RunStarted):
            if event.task is not None:
                if event.resumed_from is not None:
                    self._end(event.resumed_from.run_id)
                self.runs[event.run_id] = OpenRun(line, seq, event.run_id)
                self.asked[event.run_id], self.used[event.run_id] = set(), Usage()
        elif isinstance(event, ModelRequested):
            self.requests[event.request_id] = OpenRun(line, seq, event.run_id, event.request_id)
            self.asked.setdefault(event.run_id, set()).add(event.request_id)
        elif isinstance(event, ModelResponded):
            self.requests.pop(event.request_id, None)
            self.used[event.run_id] = self.used.get(event.run_id, Usage()) + event.usage
        else:
            self._end(event.run_id)

    def _end(self, run_id: str) -> None:
        """A run ended: it, and every request of it still unanswered."""
        self.runs.pop(run_id, None)
        self.asked.pop(run_id, None)
        self.used.pop(run_id, None)
        for request_id in [r for r, o in self.requests.items() if o.run_id == run_id]:
            del self.requests[request_id]

    def in_doubt(self) -> list[OpenRun]:
        """The runs and requests still open, in file order."""
        return sorted([*self.runs.values(), *self.requests.values()], key=lambda o: o.line)

    def unfinished(self) -> list[UnfinishedRun]:
        """The agent runs still open, in file order, with what they did so far."""
        return [
            UnfinishedRun(o.run_id, len(self.asked.get(o.run_id, ())), self.used[o.run_id])
            for o in sorted(self.runs.values(), key=lambda o: o.line)
        ]


@attrs.frozen
class UnfinishedRun:
    """An agent run without RunFinished: its model requests made and their summed usage."""

    run_id: str
    steps: int
    usage: Usage


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
    protocol = CallProtocol()
    agent_runs = RunProtocol()
    unknown: Counter[str] = Counter()
    runs = calls = failed = 0
    last_seq: int | None = None
    head_line: int | None = None
    last_line: int | None = None
    signed_seq = None if signed is None or signed.claim is None else signed.claim.seq
    signed_line: int | None = None
    signed_sha256: str | None = None
    for record in reader:
        if record.hash == head:
            head_line = record.line
        if record.seq == signed_seq and signed_line is None:
            signed_line = record.line
            signed_sha256 = reader.head_digest.hex() if reader.head_digest else None
        last_line = record.line
        last_seq = record.seq
        event = record.event
        if isinstance(event, ToolCalled):
            calls += 1
            protocol.called(record.line, record.seq, event.run_id, event.call_id, event.name)
        elif isinstance(event, ToolSucceeded | ToolFailed):
            kind = type(event).__name__
            closed = protocol.finished(
                record.line, record.seq, kind, event.call_id, event.run_id, event.name
            )
            failed += closed is not None and isinstance(event, ToolFailed)
        elif isinstance(event, AgentRunEvent):
            runs += 1 if isinstance(event, RunStarted) else 0
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
        failed=failed,
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
        unfinished_runs=tuple(agent_runs.unfinished()),
        expected_head=head,
        head_line=head_line,
        head_sha256=reader.head_digest.hex() if reader.head_digest else None,
        last_line=last_line,
        signed=signed,
        signed_line=signed_line,
        signed_line_sha256=signed_sha256,
    )
