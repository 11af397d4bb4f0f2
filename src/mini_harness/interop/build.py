"""One imported run written as mini-harness events, whatever format it came from.

A format's reader (codex.py, claude.py) says what happened, line by line: a user's
message, the model's output (text, a tool call), a tool's result, usage, a compaction, a
line it does not model. ImportedRun turns that into the events an agent run records:
RunStarted (with where the run came from), one ModelRequested and ModelResponded per model
turn (with the messages added since the previous request, and the request hash the loop
would have recorded), a ToolCalled per call with the model's id and the step, one terminal
event per call that has a result (a call without one stays in doubt, as for our own
runs), ContextTrimmed for a compaction, RunFinished at the end. A line it does not model is
kept verbatim as an event of a type mini-harness does not know (`SourceRecord`), which
every reader counts and passes over.

Memory stays flat in the size of the file: the request hash is fed message by message,
and what a compaction needs (each message without its text, and its estimated tokens)
goes to a temporary file, read back only when the source compacts.
"""

from __future__ import annotations

import datetime
import tempfile
from collections.abc import Iterator
from typing import IO, Any

import attrs
import orjson
from msgspec.structs import replace

from mini_harness.events import (
    ContextTrimmed,
    EventSink,
    FileEffect,
    ImportSource,
    JsonObject,
    JsonValue,
    Message,
    ModelRequested,
    ModelResponded,
    ReplacedMessage,
    RunFinished,
    RunStarted,
    ToolCall,
    ToolCalled,
    ToolError,
    ToolFailed,
    ToolSucceeded,
    UnknownEvent,
    Usage,
    new_id,
    text_of,
    tool_result_message,
)
from mini_harness.events.measure import RequestHasher, estimate_tokens

SOURCE_RECORD = "SourceRecord"
"""The event type of a source line kept as it was (not modelled by mini-harness)."""

COMPACTED = "[compacted by the source agent:"
"""How a message replaced by a compaction begins (ContextTrimmed's placeholder)."""

_NO_USAGE = Usage()


def ms_between(start: str | None, end: str | None) -> float:
    """Milliseconds from one ISO 8601 time to another (0 when either is missing or bad)."""
    if not start or not end:
        return 0.0
    try:
        a = datetime.datetime.fromisoformat(start.replace("Z", "+00:00"))
        b = datetime.datetime.fromisoformat(end.replace("Z", "+00:00"))
    except ValueError:
        return 0.0
    return max(0.0, round((b - a).total_seconds() * 1000, 3))


@attrs.define
class _Turn:
    """A model turn being read: its output so far, and the results that came in for its
    calls before the next turn began."""

    ts: str
    last_ts: str
    requested: str  # when the input it answers was complete (its request's time)
    texts: list[str] = attrs.Factory(list)
    calls: list[tuple[ToolCall, JsonValue, str]] = attrs.Factory(list)  # call, input, ts
    results: list[_Result] = attrs.Factory(list)
    usage: Usage = _NO_USAGE
    response_id: str | None = None
    finish_reason: str | None = None
    answered: bool = False  # a result came after the output: the next output is a new turn


@attrs.frozen
class _Result:
    """A call's result as the source recorded it."""

    call_id: str  # the model's id
    ts: str
    output: JsonValue
    is_error: bool
    effects: tuple[FileEffect, ...] | None = None


@attrs.define
class _Open:
    """A call recorded and not ended."""

    call_id: str
    name: str
    ts: str


class _Skeleton:
    """Every message sent, without its text, with its estimated tokens: one JSON line
    each in a temporary file (made at the first message), so that memory does not grow
    with the conversation; a compaction reads them back and writes them anew."""

    def __init__(self) -> None:
        self._file: IO[bytes] | None = None
        self.count = 0

    def __repr__(self) -> str:
        return f"<_Skeleton(count={self.count})>"

    def append(self, message: Message, tokens: int) -> None:
        if self._file is None:
            self._file = tempfile.TemporaryFile()  # noqa: SIM115 - closed in close()
        calls = [[call.id, call.name, call.arguments] for call in message.tool_calls]
        row = [tokens, message.role, message.content, calls, message.tool_call_id]
        row += [message.name, message.is_error]
        self._file.write(orjson.dumps(row) + b"\n")
        self.count += 1

    def __iter__(self) -> Iterator[tuple[Message, int]]:
        if self._file is None:
            return
        self._file.seek(0)
        for line in self._file:
            tokens, role, content, calls, call_id, name, is_error = orjson.loads(line)
            tool_calls = tuple(ToolCall(*call) for call in calls)
            yield Message(role, content, tool_calls, call_id, name, is_error), tokens
        self._file.seek(0, 2)

    def replace(self, messages: list[tuple[Message, int]]) -> None:
        self.close()
        self.count = 0
        for message, tokens in messages:
            self.append(message, tokens)

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


def run_start(
    run_id: str, ts: str, harness: str, imported: ImportSource, **fields: Any
) -> RunStarted:
    """An imported run's RunStarted as its first lines say it, before its task (its first
    user message, set when the run starts) is known; ImportedRun.amend changes it until
    then."""
    return RunStarted(ts, run_id, harness, (), task="", imported=imported, **fields)


class ImportedRun:
    """Write one run's events to `sink` as its source lines are read (see the module)."""

    def __init__(self, sink: EventSink, start: RunStarted) -> None:
        self.sink = sink
        self.start = start  # what its RunStarted says, but its task
        self.run_id = start.run_id
        self._held: list[UnknownEvent] = []  # lines kept before the run started
        self.task: str | None = None  # the first prompt a person wrote
        self._first_message: str | None = None  # the task when no message is a prompt
        self.started = False
        self.step = 0
        self.calls = 0
        self.results = 0
        self.usage = _NO_USAGE
        self.last_ts = start.ts
        self._input_ts: str | None = None  # when the last input (message, result) came
        self.final_text: str | None = None
        self.context_window: int | None = None
        self._turn: _Turn | None = None
        self._pending: list[Message] = []
        self._carried = _NO_USAGE  # usage reported before any turn
        self._open: dict[str, _Open] = {}  # the model's call id -> the call recorded
        self.call_steps: dict[str, int] = {}  # the model's call id -> the step that made it
        self._hasher = RequestHasher()
        # Every message sent, without its text, and its estimated tokens.
        self._skeleton = _Skeleton()
        self.finished = False

    def __repr__(self) -> str:
        return f"<ImportedRun(run_id={self.run_id!r}, step={self.step})>"

    @property
    def imported(self) -> ImportSource:
        """Where the run came from (its RunStarted's `imported`: run_start sets it)."""
        imported = self.start.imported
        assert imported is not None
        return imported

    def amend(self, **fields: Any) -> None:
        """Change what the run's RunStarted says (its model, workspace, ...), until the
        run has started."""
        if not self.started:
            self.start = replace(self.start, **fields)

    @property
    def turn_open(self) -> bool:
        """Whether a model turn is being read (it becomes step `step + 1`)."""
        return self._turn is not None

    # --- what a reader says ---------------------------------------------------------

    def user(self, ts: str, text: str, *, prompt: bool = True) -> None:
        """A user's message (or one the source agent put in the conversation as the
        user's). The first `prompt` (one a person wrote, not the agent's preamble: its
        environment, permissions, instructions files) is the run's task; without any
        before the run starts, the first message is."""
        self._close()
        self._seen(ts)
        self._input_ts = ts
        if prompt and self.task is None and not self.started:
            self.task = text
        if self._first_message is None:
            self._first_message = text
        self._pending.append(Message("user", text))

    def output_text(self, ts: str, text: str, *, response_id: str | None = None) -> None:
        """Text the model wrote."""
        turn = self._output(ts, response_id)
        if text:
            turn.texts.append(text)

    def output_call(
        self,
        ts: str,
        call_id: str,
        name: str,
        tool_input: JsonValue,
        arguments: str,
        *,
        response_id: str | None = None,
    ) -> None:
        """A tool call the model made: its id, the tool, the input as JSON and as the
        text the model sent."""
        turn = self._output(ts, response_id)
        turn.calls.append((ToolCall(call_id, name, arguments), tool_input, ts))

    def finish_reason(self, reason: str) -> None:
        if self._turn is not None:
            self._turn.finish_reason = reason

    def add_usage(self, usage: Usage, *, replace: bool = False) -> None:
        """Usage the source reported for the model turn being read (`replace`: the turn's
        usage so far is superseded, as a streamed message's later lines do)."""
        turn = self._turn
        if turn is None:
            self._carried += usage
        elif replace:
            turn.usage = usage
        else:
            turn.usage += usage

    def result(
        self,
        ts: str,
        call_id: str,
        output: JsonValue,
        *,
        is_error: bool,
        effects: tuple[FileEffect, ...] | None = None,
        answered: bool = True,
    ) -> bool:
        """The result of the model's call `call_id`, with the files it changed when the
        source says; False when no call has that id (the reader reports the line).
        `answered=False`: a result the model had within its own response (a search the
        provider ran), so the model's next output is still the same turn."""
        self._seen(ts)
        done = _Result(call_id, ts, output, is_error, effects)
        turn = self._turn
        if turn is not None and any(call.id == call_id for call, _, _ in turn.calls):
            if any(result.call_id == call_id for result in turn.results):
                return False
            turn.results.append(done)
            if answered:
                turn.answered = True
                self._input_ts = ts
            return True
        if call_id not in self._open:
            return False
        self._close()
        self._input_ts = ts
        self._end(done)
        return True

    def compacted(self, ts: str, summary: str | None) -> None:
        """The source agent replaced the conversation so far by a summary: every message
        sent before is replaced by a placeholder (ContextTrimmed), the summary joins the
        conversation as the user's."""
        self._close()
        self._seen(ts)
        self._ensure_started(ts)
        replaced = []
        before = after = 0
        sent = list(self._skeleton)  # a compaction is rare: the messages without text
        for index, (message, tokens) in enumerate(sent):
            if message.content:  # replaced by an earlier compaction
                continue
            placeholder = f"{COMPACTED} ~{tokens:,} tokens]"
            replaced.append(
                ReplacedMessage(index, message.tool_call_id, message.name, tokens, placeholder)
            )
            sent[index] = (replace(message, content=placeholder), tokens)
            before += tokens
            after += estimate_tokens(placeholder)
        if replaced:
            self._skeleton.replace(sent)
            self.sink.emit(
                ContextTrimmed(
                    ts=ts,
                    run_id=self.run_id,
                    step=self.step + 1,
                    replaced=tuple(replaced),
                    tokens_before=before,
                    tokens_after=after,
                    budget=self.context_window or after,
                )
            )
            self._hasher = RequestHasher()
            self._hasher.add([message for message, _ in sent])
        if summary:
            self._pending.append(Message("user", summary))

    def keep(self, ts: str | None, line: int, kind: str, record: JsonObject) -> None:
        """A source line mini-harness does not model, kept as it was."""
        ts = ts or self.last_ts
        data: JsonObject = {"runId": self.run_id, "sourceLine": line, "sourceType": kind}
        if self.step:
            data["step"] = self.step
        data["record"] = record
        event = UnknownEvent(type=SOURCE_RECORD, ts=ts, data=data)
        if self.started:
            self.sink.emit(event)
        else:  # the run starts when its task is known
            self._held.append(event)

    def finish(self) -> None:
        """The source ends: the last turn is written, and RunFinished. Calls without a
        result stay in doubt."""
        if self.finished:
            return
        self._close()
        self._ensure_started(self.last_ts)
        if self._carried != _NO_USAGE:
            self.usage += self._carried
        self.sink.emit(
            RunFinished(
                ts=self.last_ts,
                run_id=self.run_id,
                stop_reason="final" if self.final_text is not None else "cancelled",
                final_text=self.final_text,
                steps=self.step,
                usage=self.usage,
            )
        )
        self.finished = True
        self._skeleton.close()

    # --- inside -----------------------------------------------------------------------

    def _seen(self, ts: str | None) -> None:
        if ts:
            self.last_ts = ts

    def _output(self, ts: str, response_id: str | None) -> _Turn:
        self._seen(ts)
        turn = self._turn
        if turn is not None and (
            response_id != turn.response_id if response_id and turn.response_id else turn.answered
        ):
            self._close()
            turn = None
        if turn is None:
            # The request went out when its input was complete: the last message or
            # result before this output (the output's own time when there is none).
            requested = self._input_ts if ms_between(self._input_ts, ts) > 0 else ts
            turn = self._turn = _Turn(ts, ts, requested or ts, response_id=response_id)
            if self._carried != _NO_USAGE:
                turn.usage, self._carried = self._carried, _NO_USAGE
        turn.last_ts = ts
        if turn.response_id is None:
            turn.response_id = response_id
        return turn

    def _ensure_started(self, ts: str) -> None:
        if self.started:
            return
        start = self.start
        task = self.task if self.task is not None else self._first_message or ""
        self.sink.emit(replace(start, ts=start.ts or ts, task=task))
        self.started = True
        for event in self._held:
            self.sink.emit(event)
        self._held.clear()

    def _remember(self, messages: list[Message]) -> None:
        """Feed the hash, and keep each message without its text, with its estimated
        tokens (what a compaction replaces)."""
        self._hasher.add(messages)
        for message in messages:
            tokens = estimate_tokens(message.content)
            self._skeleton.append(replace(message, content=""), tokens)

    def _close(self) -> None:
        """Write the model turn being read: request, response, its calls, their results."""
        turn = self._turn
        if turn is None:
            return
        self._turn = None
        self._ensure_started(turn.ts)
        self.step += 1
        step = self.step
        request_id = new_id()
        messages = self._pending
        self._remember(messages)
        params: JsonObject = {}
        self.sink.emit(
            ModelRequested(
                ts=turn.requested,
                run_id=self.run_id,
                step=step,
                request_id=request_id,
                messages=tuple(messages),
                params=params,
                request_hash=self._hasher.hexdigest(params, ()),
            )
        )
        text = "\n\n".join(turn.texts)
        tool_calls = tuple(call for call, _, _ in turn.calls)
        message = Message("assistant", text, tool_calls=tool_calls)
        reason = turn.finish_reason or ("tool_calls" if tool_calls else "stop")
        self.sink.emit(
            ModelResponded(
                ts=turn.last_ts,
                run_id=self.run_id,
                request_id=request_id,
                message=message,
                finish_reason=reason,
                usage=turn.usage,
                duration_ms=ms_between(turn.requested, turn.last_ts),
                response_id=turn.response_id,
            )
        )
        self.usage += turn.usage
        self.final_text = text if not tool_calls and text else None
        self._pending = [message]
        for call, tool_input, ts in turn.calls:
            call_id = new_id()
            self.sink.emit(
                ToolCalled(
                    ts=ts,
                    run_id=self.run_id,
                    call_id=call_id,
                    name=call.name,
                    input=tool_input,
                    tool_use_id=call.id,
                    step=step,
                )
            )
            self.calls += 1
            self._open[call.id] = _Open(call_id, call.name, ts)
            self.call_steps[call.id] = step
        for result in turn.results:
            self._end(result)

    def _end(self, result: _Result) -> None:
        tool_use_id, ts, output = result.call_id, result.ts, result.output
        opened = self._open.pop(tool_use_id)
        duration = ms_between(opened.ts, ts)
        asked = ToolCall(tool_use_id, opened.name, "")
        if result.is_error:
            message = tool_result_message(asked, error=text_of(output))
            error = ToolError("handler_error", message.content)
            self.sink.emit(
                ToolFailed(
                    ts=ts,
                    run_id=self.run_id,
                    call_id=opened.call_id,
                    name=opened.name,
                    error=error,
                    duration_ms=duration,
                )
            )
        else:
            message = tool_result_message(asked, output=output, imported=True)
            self.sink.emit(
                ToolSucceeded(
                    ts=ts,
                    run_id=self.run_id,
                    call_id=opened.call_id,
                    name=opened.name,
                    output=output,
                    duration_ms=duration,
                    effects=result.effects,
                )
            )
        self.results += 1
        self._pending.append(message)
