"""The timeline of a transcript: runs (a tree when they resume or fork), steps, model
turns, tool calls with their outcome and approvals, and whatever else was recorded.

Built from the reader's records, each turned into its wire JSON (`event_to_wire`): an
event type this version has no class for still shows, and every field is read by its
wire name, whether the event was typed or kept as an unknown one. Reads the file once,
front to back, so a pipe or standard input works. `show` and `view` render it; the
filters are in `timeline_select`.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from typing import TypeAlias

import attrs

from mini_harness.errors import TranscriptCorruptError
from mini_harness.events import Event, JsonObject, JsonValue
from mini_harness.replay.history import FAILED, IN_DOUBT, SUCCEEDED, LogProblem
from mini_harness.transcripts.codec import event_to_wire
from mini_harness.transcripts.reader import TranscriptReader
from mini_harness.transcripts.verify import CallProtocol

TURN_EVENTS = frozenset({"ModelRequested", "ModelResponded", "ModelFailed"})
CALL_EVENTS = frozenset({"ToolCalled", "ToolSucceeded", "ToolFailed"})
APPROVAL_EVENTS = frozenset({"ApprovalRequested", "ApprovalDecided"})


@attrs.define
class Call:
    """A tool call: its ToolCalled, its terminal event (none: in doubt) and approvals."""

    called: JsonObject
    ended: JsonObject | None = None
    approvals: list[JsonObject] = attrs.Factory(list)

    @property
    def call_id(self) -> str:
        return str(self.called.get("callId"))

    @property
    def name(self) -> str:
        return str(self.called.get("name"))

    @property
    def step(self) -> int | None:
        step = self.called.get("step")
        return step if type(step) is int else None

    @property
    def input(self) -> JsonValue:
        return self.called.get("input")

    @property
    def status(self) -> str:
        if self.ended is None:
            return IN_DOUBT
        return SUCCEEDED if self.ended["type"] == "ToolSucceeded" else FAILED

    @property
    def output(self) -> JsonValue:
        return None if self.ended is None else self.ended.get("output")

    @property
    def error(self) -> JsonObject | None:
        error = None if self.ended is None else self.ended.get("error")
        return error if isinstance(error, dict) else None

    @property
    def duration_ms(self) -> float | None:
        ms = None if self.ended is None else self.ended.get("durationMs")
        return float(ms) if isinstance(ms, int | float) and not isinstance(ms, bool) else None

    @property
    def effects(self) -> list[JsonObject]:
        """The files the call changed, as its terminal event recorded them."""
        effects = None if self.ended is None else self.ended.get("effects")
        return objects(effects)

    def events(self) -> list[JsonObject]:
        return [self.called, *self.approvals, *([self.ended] if self.ended else [])]


@attrs.define
class Turn:
    """A model request of step `step`, the response (none yet: in doubt) and failed attempts."""

    requested: JsonObject
    response: JsonObject | None = None
    failures: list[JsonObject] = attrs.Factory(list)

    @property
    def status(self) -> str:
        if self.response is not None:
            return SUCCEEDED
        return FAILED if self.failures else IN_DOUBT

    @property
    def text(self) -> str:
        """The response's text ("" without one)."""
        message = self.response.get("message") if self.response else None
        content = message.get("content") if isinstance(message, dict) else None
        return content if isinstance(content, str) else ""

    @property
    def tool_calls(self) -> list[JsonObject]:
        message = self.response.get("message") if self.response else None
        calls = message.get("toolCalls") if isinstance(message, dict) else None
        return objects(calls)

    @property
    def usage(self) -> JsonObject:
        usage = self.response.get("usage") if self.response else None
        return usage if isinstance(usage, dict) else {}

    def events(self) -> list[JsonObject]:
        return [self.requested, *self.failures, *([self.response] if self.response else [])]


@attrs.define
class Step:
    """One step of an agent run: its model turn, the calls it made, trims and other events."""

    number: int
    turn: Turn | None = None
    calls: list[Call] = attrs.Factory(list)
    others: list[JsonObject] = attrs.Factory(list)  # ContextTrimmed, unknown types

    def events(self) -> list[JsonObject]:
        """Its events, in no particular order (`events_of` puts them in file order)."""
        found = [*self.others, *(self.turn.events() if self.turn else [])]
        for call in self.calls:
            found += call.events()
        return found


# What a run holds, in the order it was recorded: steps (agent runs), calls made outside
# any step (tool runs), and events of other kinds (each one wire JSON object).
RunItem: TypeAlias = Step | Call | JsonObject


@attrs.define
class Run:
    """A run from its RunStarted (or its first event, when that is missing) to its end."""

    index: int
    run_id: str
    started: JsonObject | None
    items: list[RunItem] = attrs.Factory(list)
    finished: JsonObject | None = None
    children: list[Run] = attrs.Factory(list)
    last_ts: str | None = None

    @property
    def parent(self) -> tuple[str, str, int | None] | None:
        """("resumed" or "forked", the parent's run id, its step) when the run names one."""
        for key, kind in (("resumedFrom", "resumed"), ("forkedFrom", "forked")):
            origin = (self.started or {}).get(key)
            if isinstance(origin, str):
                return kind, origin, None
            if isinstance(origin, dict) and isinstance(origin.get("runId"), str):
                step = origin.get("step")
                return kind, origin["runId"], step if type(step) is int else None
        return None

    @property
    def model(self) -> str | None:
        """`provider name` of an agent run's model (the name left out when the provider's
        own name already says it, as `script:demo.json` does)."""
        model = (self.started or {}).get("model")
        if not isinstance(model, dict):
            return None
        provider, name = str(model.get("provider") or ""), str(model.get("name") or "")
        return provider if name and name in provider else f"{provider} {name}".strip()

    @property
    def calls(self) -> Iterator[Call]:
        for item in self.items:
            if isinstance(item, Call):
                yield item
            elif isinstance(item, Step):
                yield from item.calls

    @property
    def steps(self) -> list[Step]:
        return [item for item in self.items if isinstance(item, Step)]

    def events(self) -> list[JsonObject]:
        """Its events, in no particular order (`events_of` puts them in file order)."""
        found = [self.started] if self.started else []
        for item in self.items:
            found += item.events() if isinstance(item, Step | Call) else [item]
        if self.finished:
            found.append(self.finished)
        return found


@attrs.define
class Timeline:
    """Everything a transcript records, arranged for reading. `runs` are the roots of the
    run tree (a resumed or forked run is a child of the run it names); `others` are
    events of no run; `problems` what is wrong with the log (in line order)."""

    path: str
    header: JsonObject | None = None
    runs: list[Run] = attrs.Factory(list)
    others: list[JsonObject] = attrs.Factory(list)
    problems: list[LogProblem] = attrs.Factory(list)
    head_hash: str | None = None
    events: int = 0

    @property
    def chain_intact(self) -> bool:
        """No line is damaged, torn or out of the hash chain."""
        return not any(p.kind in {"integrity", "torn-tail", "damage"} for p in self.problems)

    def walk(self) -> Iterator[tuple[Run, int]]:
        """Every run with its depth in the tree, parents before their children."""
        stack = [(run, 0) for run in reversed(self.runs)]
        while stack:
            run, depth = stack.pop()
            yield run, depth
            stack.extend((child, depth + 1) for child in reversed(run.children))


def read_timeline(path: str | os.PathLike[str], *, events: list[Event] | None = None) -> Timeline:
    """Read a transcript (a file, a FIFO, or "-" for standard input) into its timeline.

    A damaged line ends the reading: what came before it is kept and the damage is a
    problem. Raises TranscriptError when the file cannot be read as a transcript at all.
    `events`, when given, receives every event as it was decoded (for a second fold of
    the same reading: a stream cannot be read twice).
    """
    reader = TranscriptReader(path)
    builder = TimelineBuilder("standard input" if os.fspath(path) == "-" else os.fspath(path))
    try:
        for record in reader:
            if events is not None:
                events.append(record.event)
            builder.add(record.line, event_to_wire(record.event, record.seq, record.prev))
    except TranscriptCorruptError as exc:
        builder.problem("damage", exc.line, exc.message)
    for item in reader.problems:
        builder.problem("integrity", item.line, item.message)
    if reader.torn_tail is not None:
        builder.problem("torn-tail", reader.torn_tail.line, reader.torn_tail.describe())
    return builder.finish(head_hash=reader.head_hash)


class TimelineBuilder:
    """Feed it wire JSON objects in order (`add`); `finish` returns the Timeline."""

    def __init__(self, path: str) -> None:
        self.timeline = Timeline(path)
        self._runs: dict[str, Run] = {}
        self._calls: dict[str, Call] = {}
        self._turns: dict[str, Turn] = {}
        self._waiting: dict[str, list[JsonObject]] = {}  # approvals before their ToolCalled
        self._protocol = CallProtocol()

    def problem(self, kind: str, line: int, message: str) -> None:
        self.timeline.problems.append(LogProblem(kind, line, message))

    def add(self, line: int, event: JsonObject) -> None:
        self.timeline.events += 1
        kind = event["type"]
        run_id = event.get("runId")
        if kind == "TranscriptStarted" and line == 1:
            self.timeline.header = event
            return
        if not isinstance(run_id, str):
            self.timeline.others.append(event)
            return
        run = self._run(run_id, event, line)
        run.last_ts = str(event["ts"])
        if kind == "RunStarted":
            if run.started is None:  # its first event came before it
                run.started = event
            elif run.started is not event:
                self.problem("protocol", line, f"run {run_id} is started again")
                run.items.append(event)
        elif kind == "RunFinished":
            run.finished = event
        elif kind in CALL_EVENTS:
            self._call_event(run, line, event)
        elif kind in TURN_EVENTS:
            self._turn_event(run, event)
        elif kind in APPROVAL_EVENTS and isinstance(event.get("callId"), str):
            call = self._calls.get(event["callId"])
            if call is None:
                self._waiting.setdefault(event["callId"], []).append(event)
            else:
                call.approvals.append(event)
        else:
            step = event.get("step")
            if type(step) is int:
                self._step(run, step).others.append(event)
            else:
                run.items.append(event)

    def _run(self, run_id: str, event: JsonObject, line: int) -> Run:
        run = self._runs.get(run_id)
        if run is None:
            started = event if event["type"] == "RunStarted" else None
            if started is None:
                missing = f"{event['type']} for run {run_id}, with no RunStarted"
                self.problem("protocol", line, missing)
            run = self._runs[run_id] = Run(len(self._runs) + 1, run_id, started)
        return run

    def _step(self, run: Run, number: int) -> Step:
        for item in reversed(run.items):
            if isinstance(item, Step) and item.number == number:
                return item
        step = Step(number)
        run.items.append(step)
        return step

    def _call_event(self, run: Run, line: int, event: JsonObject) -> None:
        kind, call_id = event["type"], str(event.get("callId"))
        seq = int(event["seq"])
        if kind == "ToolCalled":
            known = len(self._protocol.problems)
            self._protocol.called(line, seq, run.run_id, call_id, str(event.get("name")))
            if len(self._protocol.problems) != known:
                run.items.append(event)  # a reused call id: shown as it is
                return
            call = self._calls[call_id] = Call(event, approvals=self._waiting.pop(call_id, []))
            step = call.step
            (self._step(run, step).calls if step is not None else run.items).append(call)
            return
        opened = self._protocol.finished(
            line, seq, kind, call_id, run.run_id, str(event.get("name"))
        )
        if opened is None:
            run.items.append(event)
        else:
            self._calls[call_id].ended = event

    def _turn_event(self, run: Run, event: JsonObject) -> None:
        request_id = str(event.get("requestId"))
        if event["type"] == "ModelRequested" and type(event.get("step")) is int:
            self._turns[request_id] = Turn(event)
            self._step(run, event["step"]).turn = self._turns[request_id]
            return
        turn = self._turns.get(request_id)
        if turn is None:
            run.items.append(event)
        elif event["type"] == "ModelResponded":
            turn.response = event
        else:
            turn.failures.append(event)

    def finish(self, *, head_hash: str | None) -> Timeline:
        timeline = self.timeline
        timeline.head_hash = head_hash
        for events in self._waiting.values():  # approvals whose call never began
            for event in events:
                self._runs[str(event["runId"])].items.append(event)
        for item in self._protocol.problems:
            self.problem("protocol", item.line, item.message)
        timeline.problems.sort(key=lambda problem: problem.line)
        for run in self._runs.values():
            parent = run.parent
            origin = self._runs.get(parent[1]) if parent else None
            if origin is not None and origin is not run and not _descends(origin, run, self._runs):
                origin.children.append(run)
            else:
                timeline.runs.append(run)
        return timeline


def _descends(run: Run, ancestor: Run, runs: dict[str, Run]) -> bool:
    """Whether `ancestor` is already above `run` (a cycle of resumedFrom would loop)."""
    seen: set[str] = set()
    parent = run.parent
    while parent is not None and parent[1] not in seen:
        if parent[1] == ancestor.run_id:
            return True
        seen.add(parent[1])
        above = runs.get(parent[1])
        parent = above.parent if above else None
    return False


def objects(value: object) -> list[JsonObject]:
    """The objects of a JSON array field: a list when it was read as JSON, a tuple when a
    typed event's field was turned back into wire JSON."""
    if not isinstance(value, list | tuple):
        return []
    return [item for item in value if isinstance(item, dict)]


def events_of(runs: Iterable[Run], others: Iterable[JsonObject] = ()) -> list[JsonObject]:
    """Every event of these runs (and `others`), in file order."""
    found = [*others, *(event for run in runs for event in run.events())]
    return sorted(found, key=lambda event: seq if type(seq := event.get("seq")) is int else 0)
