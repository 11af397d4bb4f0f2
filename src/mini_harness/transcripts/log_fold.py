"""The one log fold: a transcript's lines read once, front to back, and checked.

Every reader of a transcript's history goes through a LogFold: `transcript verify` (and
repair, signing, the corpus summary, which verify) uses one as it is; the history fold
(replay/history/fold.py: replay, show, view, resume, the corpus) is one that also builds
the history. Per line it takes the record its source gives (the TranscriptReader: the
line parsed and typed by the one decoder, its seq and prev chain checked, torn tails and
damage told apart), and checks the call protocol (every ToolCalled gets exactly one
terminal event of the same run and tool, and call ids are unique: CallProtocol) and the
agent runs' (each run and model request ends: RunProtocol).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator
from typing import Any, Protocol

import attrs
import msgspec

from mini_harness.events import (
    Event,
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
from mini_harness.transcripts.reader import IntegrityProblem, TornTail, TranscriptRecord

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


class OpenCall(msgspec.Struct, gc=False):
    """A ToolCalled seen without its terminal event (yet): in doubt if the log ends here.

    A msgspec Struct, not tracked by the cycle collector: one is made per call while
    folding millions of events, and it holds only numbers and strings. Treat it as
    read-only.
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
    or ended) are the whole state, with the count of reused ids.
    """

    def __init__(self) -> None:
        self.problems: list[ProtocolProblem] = []
        self.open_calls: dict[str, OpenCall] = {}
        # One set of every id, not one of ended calls: a new call costs one lookup and one
        # insert, and an ended call none (the ended ones are those not open).
        self.seen: set[str] = set()
        self.reused = 0  # ToolCalled lines whose call id was used before

    def called(self, line: int, seq: int, run_id: str, call_id: str, name: str) -> bool:
        """Record a ToolCalled; False (and a problem) if its call id was used before."""
        if call_id in self.seen:
            self.reused += 1
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


class RecordSource(Protocol):
    """What a fold reads its records from: a TranscriptReader (the default), or the events
    of a run as it emits them (the live OpenTelemetry export). Once iterated, it says what
    a reader says of the file: its name, whether it was empty, its problems, how many
    records it read and the hash of the last."""

    name: str
    empty: bool
    problems: list[IntegrityProblem]
    torn_tail: TornTail | None
    records_read: int
    head_hash: str | None

    def __iter__(self) -> Iterator[TranscriptRecord]: ...


_AGENT_RUN_EVENTS = (RunStarted, ModelRequested, ModelResponded, RunFinished)


class LogFold:
    """Fold a transcript's records, checking the call and agent run protocols.

    Iterating it reads `reader` once, front to back. Each line's event goes to one of
    three steps, which a fold that builds more (the history fold) extends: `_begun` (a
    ToolCalled, and whether its call id is new), `_ended` (a ToolSucceeded or ToolFailed,
    and the call it ends, if any) and `_other` (every other event: agent runs' events fed
    to their protocol, unknown types counted, a TranscriptStarted after line 1 kept as a
    problem). What a step puts in `out` is yielded once its line is folded.
    """

    def __init__(self, reader: RecordSource) -> None:
        self.reader = reader
        self.protocol = CallProtocol()
        self.agent_protocol = RunProtocol()
        self.offset = 0  # byte offset of the last line read
        self.runs_started = 0  # RunStarted lines
        self.failed = 0  # calls ended by a ToolFailed
        self.unknown: Counter[str] = Counter()  # events of unknown types, by type
        self.misplaced: list[IntegrityProblem] = []  # a TranscriptStarted after line 1
        self.out: list[Any] = []

    def __iter__(self) -> Iterator[Any]:
        return self._fold(self.reader)

    @property
    def calls(self) -> int:
        """The ToolCalled lines read (a reused call id counted too)."""
        return len(self.protocol.seen) + self.protocol.reused

    def _fold(self, records: Iterable[TranscriptRecord]) -> Iterator[Any]:
        # Once per line of files with millions of lines: a call's two events take the
        # first two branches, with what they touch in locals.
        out = self.out
        called = self.protocol.called
        finished = self.protocol.finished
        begun, ended, other = self._begun, self._ended, self._other
        for record in records:
            self.offset = record.offset
            event: Any = record.event  # typed by `kind`, which mypy cannot narrow on
            kind = type(event)
            if kind is ToolSucceeded or kind is ToolFailed:
                opened = finished(
                    record.line,
                    record.seq,
                    kind.__name__,
                    event.call_id,
                    event.run_id,
                    event.name,
                )
                if opened is not None and kind is ToolFailed:
                    self.failed += 1
                ended(record, event, opened)
            elif kind is ToolCalled:
                fresh = called(
                    record.line,
                    record.seq,
                    event.run_id,
                    event.call_id,
                    event.name,
                )
                begun(record, event, fresh)
            else:
                other(record, event)
            if out:
                yield from out
                out.clear()

    def _begun(self, record: TranscriptRecord, event: ToolCalled, fresh: bool) -> None:
        """A ToolCalled, checked (`fresh`: its call id was not used before)."""

    def _ended(
        self, record: TranscriptRecord, event: ToolSucceeded | ToolFailed, opened: OpenCall | None
    ) -> None:
        """A terminal event, checked: `opened` is the call it ends (None: it ends none)."""

    def _other(self, record: TranscriptRecord, event: Event) -> None:
        """Check an event other than a call's."""
        if isinstance(event, _AGENT_RUN_EVENTS):
            if isinstance(event, RunStarted):
                self.runs_started += 1
            self.agent_protocol.feed(record.line, record.seq, event)
        elif isinstance(event, UnknownEvent):
            self.unknown[event.type] += 1
        elif isinstance(event, TranscriptStarted) and record.line != 1:
            message = "TranscriptStarted after line 1"
            self.misplaced.append(IntegrityProblem(record.line, record.offset, record.seq, message))
