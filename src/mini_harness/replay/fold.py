"""Fold: rebuild runs, calls and context reports from a transcript's events alone.

Never calls a handler. Streams the file through the raw reader, so memory grows with the
number of runs and call ids (to catch reused ids), never with the size of the events.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from pathlib import Path

import attrs
import orjson

from mini_harness.errors import ReplayError
from mini_harness.events import JsonObject, JsonValue
from mini_harness.replay.model import (
    FAILED,
    IN_DOUBT,
    SUCCEEDED,
    CallRecord,
    FoldResult,
    LogProblem,
    RunInfo,
    RunSummary,
    Totals,
)
from mini_harness.runtime.context import (
    ContextRow,
    estimate_tokens,
    pretty_json,
    render_context_report,
)
from mini_harness.runtime.dispatch import display_failure, display_result
from mini_harness.transcripts.codec import HASH_BYTES
from mini_harness.transcripts.protocol import CallProtocol, OpenCall
from mini_harness.transcripts.reader import TranscriptReader

_NUMBER = (int, float)

_APPROVAL_EVENTS = frozenset({"ApprovalRequested", "ApprovalDecided"})


@attrs.define
class _RunState:
    info: RunInfo
    succeeded: int = 0
    failed: int = 0
    in_doubt: int = 0
    # Context report: token estimates only, so a long run costs no memory per call.
    tool_tokens: int = 0
    result_tokens: int = 0
    error_tokens: int = 0

    def count_tokens(self, name: str, tool_input: JsonValue, data: JsonObject) -> None:
        """Add a finished call (its terminal event's fields) to the report's estimates."""
        duration = data["durationMs"]
        if data["type"] == "ToolSucceeded":
            shown = display_result(name, tool_input, data["output"], duration)
            self.result_tokens += estimate_tokens(pretty_json(shown))
        else:
            shown = display_failure(name, tool_input, data["error"], duration)
            self.error_tokens += estimate_tokens(pretty_json(shown))

    def summary(self, context_reports: bool) -> RunSummary:
        report = render_context_report(self.context_rows()) if context_reports else None
        return RunSummary(self.info, self.succeeded, self.failed, self.in_doubt, report)

    def context_rows(self) -> list[ContextRow]:
        """Tool definitions, then one row for the results and one for the errors, if any.

        A run with one successful call (every successful CLI run) gives exactly the rows the
        live `--context-report` printed. Several results are summed in one row.
        """
        rows = [ContextRow("Tool definitions", self.tool_tokens)]
        for count, tokens, one, many in (
            (self.succeeded, self.result_tokens, "Tool result", "Tool results"),
            (self.failed, self.error_tokens, "Tool error", "Tool errors"),
        ):
            if count:
                rows.append(ContextRow(one if count == 1 else f"{many} ({count})", tokens))
        return rows


class TranscriptFold:
    """Iterate a transcript as RunInfo (when a run starts) and CallRecord (when a call ends).

    Calls still open at the end of the file are yielded last, as in-doubt. After (or during)
    iteration, `summaries()`, `problems()` and `totals()` describe what was read so far;
    `result()` collects everything into a FoldResult. `run` selects one run by 1-based
    index (all digits) or by run id / id prefix (the first run it matches).

    The common lines (call events that break no rule) are read by a loop of the fold's
    own; `fast=False` reads every line through the reader's general path instead. Both
    give the same results: the general path is the reference the fast loop is tested on.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        run: str | None = None,
        context_reports: bool = False,
        fast: bool = True,
    ) -> None:
        self.path = Path(path)
        self.fast = fast
        self.reader = TranscriptReader(self.path)
        self.context_reports = context_reports
        self.selection = run
        self.transcript_id: str | None = None
        self.offset = 0  # byte offset of the last line read
        self.finished = False
        self._protocol = CallProtocol()
        self._inputs: dict[str, JsonValue] = {}  # open calls only
        self._runs: dict[str, _RunState] = {}
        self._selected: str | None = None
        self._extra_problems: list[LogProblem] = []
        self._unknown = 0

    def __repr__(self) -> str:
        return f"<TranscriptFold(path={str(self.path)!r}, offset={self.offset})>"

    @property
    def selected_run(self) -> RunInfo | None:
        state = self._runs.get(self._selected) if self._selected else None
        return state.info if state else None

    def __iter__(self) -> Iterator[RunInfo | CallRecord]:
        return self._read() if self.fast else self._read_general()

    def _finish(self) -> Iterator[CallRecord]:
        """After the last line: the calls still open, then the check that the run was found."""
        yield from self._in_doubt()
        self.finished = True
        if self.selection is not None and self._selected is None:
            wanted = self.selection or '""'
            raise ReplayError(f"{self.path} has no run {wanted} ({self._listing()})")

    def _listing(self, shown: int = 10) -> str:
        """`it has 2 runs: 1 <id>, 2 <id>`, the first `shown` of them."""
        runs = [f"{state.info.index} {run_id}" for run_id, state in self._runs.items()]
        if not runs:
            return "it has no runs"
        more = f", and {len(runs) - shown} more" if len(runs) > shown else ""
        noun = "run" if len(runs) == 1 else "runs"
        return f"it has {len(runs)} {noun}: {', '.join(runs[:shown])}{more}"

    def _read_general(self) -> Iterator[RunInfo | CallRecord]:
        """Every line through the reader's raw path and `_event`: the reference for `_read`."""
        for line, offset, seq, _prev, _hash, data in self.reader.raw():
            self.offset = offset
            yield from self._event(line, seq, data)
        yield from self._finish()

    def _read(self) -> Iterator[RunInfo | CallRecord]:  # noqa: PLR0915 - one hot loop
        """The reader's raw path and `_event` fused into one loop, for the common lines.

        Runs once per line of files with millions of them. A line is taken here only when
        it is a call event that the reader would accept without a problem (a compact JSON
        object ending the line, the envelope and fields of its type, the next seq, the
        right prev); a ToolCalled or terminal event is folded here only when it breaks no
        protocol rule. Every other line goes to `TranscriptReader.resume` and every other
        event to `_event`, which decide and word what is wrong: the results are those of
        `_read_general` (tests/replay/test_fold_paths.py folds a corpus both ways).
        """
        reader = self.reader
        handle, offset = reader.open()
        resume = reader.resume
        event = self._event
        loads = orjson.loads
        json_error = orjson.JSONDecodeError
        # A copy of an empty SHA-256 costs less than a new one (which looks its digest up
        # by name and initialises it); the digest is the same.
        fresh_hash = hashlib.sha256().copy
        protocol = self._protocol
        seen = protocol.seen
        runs = self._runs
        everything = self.selection is None
        count_tokens = self.context_reports
        # Builtins as locals: a local is read faster than a builtin, and this runs per line.
        type_of, text, integer, table, numbers = type, str, int, dict, _NUMBER
        hash_bytes, record = HASH_BYTES, CallRecord
        # A CallRecord is made per call: object.__new__ and the field stores in this loop
        # cost less than calling the class (its __init__ frame). Every field is set; the
        # differential test compares these records with the general path's (attrs __eq__
        # reads every field, so a field left unset fails it).
        new = object.__new__
        # Calls opened here: call id -> (line, seq, run id, name, input). Moved into the
        # protocol's open calls (and self._inputs) before any other code looks at them.
        # The call opened last is kept apart (pending_id, pending) until another one opens:
        # its terminal event nearly always comes next, and a dict insert and pop per call
        # cost more than that. Everything in `opened` began before it.
        opened: dict[str, tuple[int, int, str, str, JsonValue]] = {}
        pending_id: str | None = None
        pending: tuple[int, int, str, str, JsonValue] = (0, 0, "", "", None)
        ready = False  # line 1 and upcast files take the general path
        number = 0
        start = offset
        expected = 0
        prev_hash: str | None = None
        done = 0  # the last line fully folded, and where it starts (none yet: as created)
        done_start = self.offset
        counted = reader.records_read  # the reader's counts go on from where they are
        torn = reader.torn_tail
        with handle:
            try:
                for raw in handle:
                    number += 1
                    start = offset
                    offset += len(raw)
                    if ready and raw[-2:] == b"}\n":
                        body = raw[:-1]
                        try:
                            data = loads(body)
                            kind = data["type"]
                            seq = data["seq"]
                            prev = data["prev"]
                            ts = data["ts"]
                            run_id = data["runId"]
                            call_id = data["callId"]
                            name = data["name"]
                        except (json_error, KeyError, TypeError):
                            seq = -1  # not a line for this loop
                        if (
                            seq == expected
                            and type_of(seq) is integer
                            and prev == prev_hash
                            and type_of(ts) is text
                            and type_of(run_id) is text
                            and type_of(call_id) is text
                            and type_of(name) is text
                        ):
                            if kind == "ToolCalled":
                                try:
                                    tool_input = data["input"]
                                except KeyError:
                                    pass
                                else:
                                    # A new call id: every call that began, here or in
                                    # the protocol, is in `seen`.
                                    if run_id in runs and call_id not in seen:
                                        seen.add(call_id)
                                        hasher = fresh_hash()
                                        hasher.update(body)
                                        prev_hash = hasher.digest()[:hash_bytes].hex()
                                        expected = seq + 1
                                        done = number
                                        done_start = start
                                        if pending_id is not None:
                                            opened[pending_id] = pending
                                        pending_id = call_id
                                        pending = (number, seq, run_id, name, tool_input)
                                        continue
                            elif kind == "ToolSucceeded" or kind == "ToolFailed":  # noqa: PLR1714
                                if kind == "ToolSucceeded":
                                    try:
                                        output = data["output"]
                                        duration = data["durationMs"]
                                    except KeyError:
                                        duration = None
                                    error = None
                                    status = SUCCEEDED
                                    fields_fit = type_of(duration) in numbers
                                else:
                                    duration = data.get("durationMs")
                                    error = data.get("error")
                                    output = None
                                    status = FAILED
                                    fields_fit = (
                                        type_of(duration) in numbers
                                        and type_of(error) is table
                                        and type_of(error.get("kind")) is text
                                        and type_of(error.get("message")) is text
                                    )
                                call = pending if call_id == pending_id else opened.get(call_id)
                                # The call must be open here, in the same run and tool.
                                if (
                                    fields_fit
                                    and call is not None
                                    and call[2] == run_id
                                    and call[3] == name
                                ):
                                    if call_id == pending_id:
                                        pending_id = None
                                    else:
                                        del opened[call_id]
                                    line = call[0]
                                    tool_input = call[4]
                                    hasher = fresh_hash()
                                    hasher.update(body)
                                    prev_hash = hasher.digest()[:hash_bytes].hex()
                                    expected = seq + 1
                                    done = number
                                    done_start = start
                                    state = runs[run_id]
                                    if error is None:  # a ToolSucceeded
                                        state.succeeded += 1
                                    else:
                                        state.failed += 1
                                    if count_tokens:
                                        state.count_tokens(name, tool_input, data)
                                    if everything or run_id == self._selected:
                                        self.offset = start
                                        reader.records_read = counted + number
                                        reader.head_hash = prev_hash
                                        item = new(record)
                                        item.run_index = state.info.index
                                        item.run_id = run_id
                                        item.call_id = call_id
                                        item.name = name
                                        item.input = tool_input
                                        item.status = status
                                        item.line = line
                                        item.end_line = number
                                        item.output = output
                                        item.error = error
                                        item.duration_ms = duration
                                        yield item
                                    continue
                    # Anything else: the general paths decide, for this line alone.
                    if pending_id is not None:
                        opened[pending_id] = pending
                        pending_id = None
                    if opened:
                        self._adopt(opened)
                    self.offset = done_start
                    reader.records_read = counted + number - 1
                    reader.head_hash = prev_hash
                    for line, line_start, seq, _prev, line_hash, data in resume(
                        (raw,), handle, line=number, offset=start, seq=expected, prev=prev_hash
                    ):
                        prev_hash = line_hash
                        expected = seq + 1
                        done = line
                        done_start = line_start
                        self.offset = line_start
                        yield from event(line, seq, data)
                    if reader.torn_tail is not torn:
                        break
                    ready = not reader.upcasting
            except OSError as exc:  # a read of the file failed (the loop does no other I/O)
                raise reader.unreadable(exc) from None
            finally:
                # However the loop ends, the state says how far folding got.
                if pending_id is not None:
                    opened[pending_id] = pending
                if opened:
                    self._adopt(opened)
                if reader.torn_tail is torn:
                    self.offset = done_start
                    reader.records_read = counted + done
                    reader.head_hash = prev_hash
        yield from self._finish()

    def _adopt(self, opened: dict[str, tuple[int, int, str, str, JsonValue]]) -> None:
        """Hand the calls `_read` opened to the protocol (in the order they began)."""
        open_calls = self._protocol.open_calls
        for call_id, (line, seq, run_id, name, tool_input) in opened.items():
            open_calls[call_id] = OpenCall(line, seq, run_id, call_id, name)
            self._inputs[call_id] = tool_input
        opened.clear()

    def _event(self, line: int, seq: int, data: JsonObject) -> Iterator[RunInfo | CallRecord]:
        """Fold one event the reader accepted: any type, any protocol problem."""
        protocol = self._protocol
        runs = self._runs
        kind = data["type"]
        if kind == "ToolSucceeded" or kind == "ToolFailed":  # noqa: PLR1714
            opened = protocol.finished(line, seq, kind, data["callId"], data["runId"], data["name"])
            if opened is None:
                return
            state = runs[opened.run_id]
            tool_input = self._inputs.pop(opened.call_id)
            if kind == "ToolSucceeded":
                state.succeeded += 1
                output = data["output"]
                error = None
            else:
                state.failed += 1
                output = None
                error = data["error"]
            if self.context_reports:
                state.count_tokens(opened.name, tool_input, data)
            if self.selection is None or opened.run_id == self._selected:
                yield CallRecord(
                    state.info.index,
                    opened.run_id,
                    opened.call_id,
                    opened.name,
                    tool_input,
                    SUCCEEDED if error is None else FAILED,
                    opened.line,
                    line,
                    output,
                    error,
                    data["durationMs"],
                )
        elif kind == "ToolCalled":
            call_id = data["callId"]
            run_id = data["runId"]
            if run_id not in runs:
                yield from self._run_started(line, data, recorded=False)
            problems = protocol.problems
            known = len(problems)
            protocol.called(line, seq, run_id, call_id, data["name"])
            if len(problems) == known:
                self._inputs[call_id] = data["input"]
        elif kind == "RunStarted":
            if data["runId"] in runs:
                self._extra_problems.append(
                    LogProblem("protocol", line, f"run {data['runId']} is started again")
                )
                return
            yield from self._run_started(line, data, recorded=True)
        elif kind == "TranscriptStarted":
            if line == 1:
                self.transcript_id = data["transcriptId"]
        elif kind not in _APPROVAL_EVENTS:  # approvals: see replay/effects.py
            self._unknown += 1

    def _in_doubt(self) -> Iterator[CallRecord]:
        for opened in self._protocol.in_doubt():
            state = self._runs[opened.run_id]
            state.in_doubt += 1
            if self._shows(opened.run_id):
                tool_input = self._inputs[opened.call_id]
                yield CallRecord(
                    state.info.index,
                    opened.run_id,
                    opened.call_id,
                    opened.name,
                    tool_input,
                    IN_DOUBT,
                    opened.line,
                )

    def _run_started(self, line: int, data: JsonObject, *, recorded: bool) -> Iterator[RunInfo]:
        run_id = data["runId"]
        if recorded:
            tools = tuple(tool for tool in data["tools"] if isinstance(tool, dict))
            info = RunInfo(len(self._runs) + 1, run_id, data["harness"], data["ts"], line, tools)
        else:
            self._extra_problems.append(
                LogProblem("protocol", line, f"ToolCalled for run {run_id}, with no RunStarted")
            )
            info = RunInfo(len(self._runs) + 1, run_id, "", data["ts"], line, ())
        state = _RunState(info)
        if self.context_reports:
            state.tool_tokens = estimate_tokens(pretty_json(list(info.tools)))
        self._runs[run_id] = state
        if self._selected is None and self._selects(info):
            self._selected = run_id
        if self.selection is None or self._selected == run_id:
            yield info

    def _shows(self, run_id: str) -> bool:
        return self.selection is None or run_id == self._selected

    def _selects(self, info: RunInfo) -> bool:
        wanted = self.selection
        if not wanted:  # None selects every run; "" selects none
            return False
        if wanted.isdigit():
            return info.index == int(wanted)
        return info.run_id.startswith(wanted)

    # --- what was found so far --------------------------------------------------------

    def summaries(self) -> list[RunSummary]:
        return [
            state.summary(self.context_reports)
            for run_id, state in self._runs.items()
            if self._shows(run_id)
        ]

    def problems(self) -> list[LogProblem]:
        """Integrity, protocol and torn-tail problems in line order."""
        found = [LogProblem("integrity", p.line, p.message) for p in self.reader.problems]
        found += [LogProblem("protocol", p.line, p.message) for p in self._protocol.problems]
        found += self._extra_problems
        tail = self.reader.torn_tail
        if tail is not None:
            found.append(LogProblem("torn-tail", tail.line, tail.describe()))
        return sorted(found, key=lambda problem: problem.line)

    def totals(self) -> Totals:
        states = [state for run_id, state in self._runs.items() if self._shows(run_id)]
        return Totals(
            events=self.reader.records_read,
            runs=len(states),
            succeeded=sum(s.succeeded for s in states),
            failed=sum(s.failed for s in states),
            in_doubt=sum(s.in_doubt for s in states),
            unknown_events=self._unknown,
        )

    def result(self) -> FoldResult:
        """Read the whole transcript and collect what it says (one object per call)."""
        calls = [item for item in self if isinstance(item, CallRecord)]
        return FoldResult(
            path=str(self.path),
            transcript_id=self.transcript_id,
            runs=tuple(self.summaries()),
            calls=tuple(calls),
            problems=tuple(self.problems()),
            totals=self.totals(),
        )


def fold_transcript(
    path: str | os.PathLike[str], *, run: str | None = None, context_reports: bool = True
) -> FoldResult:
    """Fold a transcript into runs, calls, problems and (by default) context reports.

    Raises a TranscriptError if the file cannot be read, ReplayError if `run` matches none.
    """
    return TranscriptFold(path, run=run, context_reports=context_reports).result()
