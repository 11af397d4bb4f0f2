"""Offline replay of an agent run: recorded answers, tools run again, divergence found.

The run goes through the agent loop again with a model that answers each request with the
response recorded for that step, without a network or a key. Tools run again under
today's rules (read-only or idempotent ones, unless side effects are allowed; never one
recorded as denied; only what today's approval policy allows); a call not allowed to run
is served its recorded result. Each rebuilt request is hashed: the first
step whose hash differs from the recorded `requestHash` is where the run diverged, and the
messages that differ (usually a tool result that changed) say why.
"""

from __future__ import annotations

from collections.abc import Callable

import attrs
import orjson

from mini_harness.agent import (
    AgentLoop,
    Message,
    ModelRequest,
    ModelResponse,
    Opening,
    SilentReporter,
    ToolCall,
    ToolOutcome,
    call_outcome,
)
from mini_harness.errors import ModelError, counted
from mini_harness.events import Event, JsonValue, ModelRequested, ToolError, ToolFailed
from mini_harness.replay.continuing.call_by_call import (
    compare,
    denied_today,
    diff,
    held_back,
    json_lines,
    refused_today,
)
from mini_harness.replay.continuing.outcomes import (
    DIVERGED,
    SKIPPED,
    RerunOutcome,
)
from mini_harness.replay.continuing.plans import continued_config
from mini_harness.replay.history import Call, Run
from mini_harness.runtime.approval import Approver
from mini_harness.runtime.dispatch import ToolRuntime
from mini_harness.runtime.registry import ToolRegistry
from mini_harness.runtime.validation import decode_arguments
from mini_harness.transcripts.codec import Redactor


@attrs.define
class AgentReplay:
    """How an offline replay of one run went.

    `identical_through` is the last step whose rebuilt request matched the record;
    `diverged_at` the first that did not (None: none did), with `explanation` and `diffs`
    saying what differs. `record_ended` is set when the run asked for a step the record has
    no answer for. `stopped_at` is the step and request the replay could not answer from
    the record (where a live continuation goes on).
    """

    run: Run
    calls: list[RerunOutcome[Call | None]] = attrs.Factory(list)
    identical_through: int = 0
    diverged_at: int | None = None
    explanation: str = ""
    diffs: list[str] = attrs.Factory(list)
    record_ended: bool = False
    stopped_at: tuple[int, ModelRequest] | None = None

    @property
    def summary(self) -> str:
        if self.diverged_at is not None:
            return f"diverged at step {self.diverged_at}: {self.explanation}"
        tail = " (the record has no answer after it)" if self.record_ended else ""
        return f"replayed: identical through step {self.identical_through}{tail}"


class RecordedRun(SilentReporter):
    """The recorded run, standing in for what the live run had.

    As the model it answers each request with the response recorded for its step, after
    checking that the request is the recorded one: the `requestHash` the loop recorded for
    it (heard as the replay's event sink, which keeps no event) is the recorded one. As the
    loop's reporter (saying nothing) it hears how each call got its result, and `serve`
    answers, from the record, the calls the replay may not run again.
    """

    def __init__(
        self,
        replay: AgentReplay,
        registry: ToolRegistry,
        on_call: Callable[[RerunOutcome[Call | None]], None],
        *,
        allow_side_effects: bool = False,
        approver: Approver | None = None,
        redactor: Redactor | None = None,
    ) -> None:
        self.run = run = replay.run
        self.redactor = redactor
        self.replay = replay
        self.registry = registry
        self.on_call = on_call
        self.allow_side_effects = allow_side_effects
        self.approver = approver
        self.last_hash: str | None = None  # of the request the loop is about to send
        self.name = f"transcript:{run.run_id}"
        self.model = run.model.name if run.model is not None else ""
        self._next = 0
        self._served: set[tuple[int, str]] = set()
        self._failure: ToolError | None = None  # how the call being run failed, as recorded
        self._recorded = {
            (step.number, call.tool_use_id): call for step in run.steps for call in step.calls
        }

    def __repr__(self) -> str:
        return f"<RecordedRun(run={self.run.run_id!r}, step={self._next})>"

    def emit(self, event: Event) -> None:
        if isinstance(event, ModelRequested):
            self.last_hash = event.request_hash
        elif isinstance(event, ToolFailed):
            self._failure = event.error

    def complete(
        self,
        request: ModelRequest,
        *,
        on_text: Callable[[str], None] | None = None,
        on_retry: Callable[[ModelError], None] | None = None,
    ) -> ModelResponse:
        # A request the record cannot answer ends the replay as a failed model would end
        # a run: a ModelError, recorded, and the run's stop reason is model_error.
        index, self._next = self._next, self._next + 1
        replay = self.replay
        if index >= len(self.run.steps):
            replay.record_ended = True
            replay.stopped_at = (replay.identical_through + 1, request)
            raise ModelError("invalid_response", f"the record has no step {index + 1}")
        recorded = self.run.steps[index]
        if self.last_hash != recorded.recorded_hash:
            replay.diverged_at = recorded.number
            replay.stopped_at = (recorded.number, request)
            replay.explanation, replay.diffs = explain(recorded.request, request)
            raise ModelError("invalid_response", replay.summary)
        replay.identical_through = recorded.number
        response = recorded.model_response()
        if response is None:
            replay.record_ended = True
            replay.stopped_at = (recorded.number, request)
            raise ModelError(
                "invalid_response", f"the record has no answer to step {recorded.number}"
            )
        if on_text is not None and response.message.content:
            on_text(response.message.content)
        return response

    def _add(self, call: RerunOutcome[Call | None]) -> None:
        self.replay.calls.append(call)
        self.on_call(call)

    def serve(self, step: int, call: ToolCall) -> ToolOutcome | None:
        """The recorded result of a call that may not run again (None: it runs): one
        recorded as denied, one whose input was not recorded whole, one with side effects
        (unless they are allowed), one today's approver does not allow."""
        recorded = self._recorded.get((step, call.id))
        reason = self._held_back(step, call, recorded)
        if reason is None:
            return None
        self._served.add((step, call.id))
        self._add(RerunOutcome(recorded, SKIPPED, reason, step=step, asked=call))
        if recorded is None:  # the recorded run never got to it
            text = f"Tool {call.name} was not run ({reason}) and has no recorded result"
            return call_outcome(call, error=text)
        message = recorded.result_message(call)
        if message.is_error:
            return ToolOutcome(call, message, error=message.content)
        return ToolOutcome(call, message, output=recorded.output)

    def _held_back(self, step: int, call: ToolCall, recorded: Call | None) -> str | None:
        allow = self.allow_side_effects
        reason = held_back(self.registry, call.name, recorded, allow_side_effects=allow)
        if reason is not None:
            return reason
        tool_input, refused = decode_arguments(call.name, call.arguments)
        if refused is not None:  # dispatch refuses it without running anything
            return None
        call_id = recorded.call_id if recorded is not None else f"{step}:{call.id}"
        ids = (self.run.run_id, call_id)
        reason = refused_today(self.approver, self.registry, call.name, tool_input, ids=ids)
        return None if reason is None else denied_today(reason)

    def tool_done(self, step: int, outcome: ToolOutcome) -> None:
        asked = outcome.call
        if (step, asked.id) in self._served:
            return
        failure, self._failure = self._failure, None
        recorded = self._recorded.get((step, asked.id))
        if recorded is None:
            reason = "the recorded run never made this call"
            self._add(RerunOutcome(None, DIVERGED, reason, step=step, asked=asked))
            return
        if outcome.error is None:
            failure = None
        elif failure is None:  # every failed dispatch records ToolFailed; this is a guard
            failure = ToolError("handler_error", outcome.error)
        found = compare(recorded, outcome.output, failure, self.redactor)
        self._add(
            RerunOutcome[Call | None](
                recorded,
                found.outcome,
                found.reason,
                found.current,
                found.diff,
                step=step,
                asked=asked,
            )
        )


def explain(recorded: ModelRequest, rebuilt: ModelRequest) -> tuple[str, list[str]]:
    """Why two requests differ: a sentence, and a unified diff per differing message."""
    pairs = list(zip(recorded.messages, rebuilt.messages, strict=False))
    diffs = [message_diff(index, old, new) for index, (old, new) in enumerate(pairs) if old != new]
    if diffs:
        changed = [old for old, new in pairs if old != new]
        noun = "tool result" if all(m.role == "tool" for m in changed) else "message"
        verb = "differs" if len(changed) == 1 else "differ"
        return f"{counted(len(changed), noun)} {verb} from the recorded ones", diffs
    if len(recorded.messages) != len(rebuilt.messages):
        return (
            f"the request has {len(rebuilt.messages)} messages, "
            f"the recorded one {len(recorded.messages)}",
            [],
        )
    if recorded.tools != rebuilt.tools:
        old_tools = {tool.name: tool for tool in recorded.tools}
        new_tools = {tool.name: tool for tool in rebuilt.tools}
        names = sorted(
            n for n in old_tools.keys() | new_tools.keys() if old_tools.get(n) != new_tools.get(n)
        )
        return f"the tool definitions differ from the recorded ones: {', '.join(names)}", []
    return "the request parameters differ from the recorded ones", []


def message_diff(index: int, old: Message, new: Message) -> str:
    """A unified diff of two messages' text (JSON results indented), headed by what they are."""
    label = f"{old.name} result ({old.tool_call_id})" if old.role == "tool" else old.role
    return diff(_shown(old.content), _shown(new.content), f"message {index + 1}: {label}")


def _shown(text: str) -> list[str]:
    try:
        value: JsonValue = orjson.loads(text)
    except orjson.JSONDecodeError:
        return text.splitlines()
    return json_lines(value)


def replay_agent_run(
    run: Run,
    registry: ToolRegistry,
    *,
    allow_side_effects: bool = False,
    on_call: Callable[[RerunOutcome[Call | None]], None] = lambda call: None,
    approver: Approver | None = None,
    redactor: Redactor | None = None,
) -> AgentReplay:
    """Replay `run` offline against `registry` (see the module's docstring), each call
    that would run again first put to `approver` (today's policy; it must answer at once),
    what it gives now redacted with `redactor` (the command's log's) before it is
    compared with its record.
    Nothing is recorded; `on_call` hears of each call as it got its result; the result says
    where the run diverged, if it did."""
    replay = AgentReplay(run)
    if not run.steps:
        return replay
    model = RecordedRun(
        replay,
        registry,
        on_call,
        allow_side_effects=allow_side_effects,
        approver=approver,
        redactor=redactor,
    )
    # One request more than the record has: a run that stopped with tool results not yet
    # sent asks for it, and learns that the record ends there.
    config = continued_config(run, max_steps=len(run.steps) + 1, stream=False)
    loop = AgentLoop(ToolRuntime(registry, model), model, config, model, served=model.serve)
    loop.run(Opening(run.steps[0].request.messages))
    return replay
