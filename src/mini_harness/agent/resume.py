"""Continuing a recorded agent run: the history it had, and what is left to do.

A run's transcript tells exactly where it stopped: the last request sent, the answer (if
one came), and each tool call of that answer: ended (its recorded result is used, never
run again), in doubt (begun, never ended: the process died while it ran) or never begun.
From that, `plan_resume` builds the opening of a new run that continues it, so that the
history sent to the model is always valid: every tool call gets exactly one result.
`plan_fork` builds the opening of a run that branches off before a given request.

Reading the transcript is replay's job (replay.continuation feeds these functions).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import attrs

from mini_harness.agent.loop import Opening
from mini_harness.agent.provider import Message, ToolCall
from mini_harness.agent.reporting import call_outcome
from mini_harness.errors import MiniHarnessError
from mini_harness.events import JsonObject, JsonValue, ToolError, ToolFailed, utc_timestamp

INTERRUPTED_RESULT = (
    "Tool {name} was interrupted: the run ended before the call finished, so it may or may "
    "not have taken effect (closed by `mini-harness resume`)"
)
"""What a call in doubt is closed with, in the transcript and in the model's history."""


class ResumeError(MiniHarnessError):
    """A run cannot be continued as asked; the message says why."""


@attrs.frozen
class RecordedCall:
    """A tool call of an agent run as the transcript has it.

    `ended` is False for a call in doubt (ToolCalled, no terminal event); otherwise it
    succeeded with `output` or failed with `error` (`kind`, `message`).
    """

    call_id: str
    run_id: str
    name: str
    tool_use_id: str | None
    step: int | None
    ended: bool = False
    output: JsonValue = None
    error: JsonObject | None = None

    def result_message(self, call: ToolCall) -> Message:
        """The tool result the model got (or, in doubt, gets) for `call`."""
        if not self.ended:
            return call_outcome(call, error=("interrupted", interrupted_text(self.name))).message
        if self.error is not None:
            error = (str(self.error.get("kind")), str(self.error.get("message")))
            return call_outcome(call, error=error).message
        return call_outcome(call, output=self.output).message


def interrupted_text(name: str) -> str:
    return INTERRUPTED_RESULT.format(name=name)


@attrs.frozen
class ResumePlan:
    """How to continue a run: the opening of the new run, and the calls in doubt to close
    (record as `interrupted`) before it starts."""

    opening: Opening
    to_close: tuple[RecordedCall, ...]

    def closing_events(self) -> list[ToolFailed]:
        """The terminal events that close the calls in doubt, to record before the new run
        starts (each under its own run's id)."""
        return [
            ToolFailed(
                ts=utc_timestamp(),
                run_id=call.run_id,
                call_id=call.call_id,
                name=call.name,
                error=ToolError(kind="interrupted", message=interrupted_text(call.name)),
                duration_ms=0.0,  # unknown: the run ended before measuring it
            )
            for call in self.to_close
        ]


def plan_resume(
    *,
    run_id: str,
    step: int,
    request: Sequence[Message],
    answer: Message | None,
    calls: Sequence[RecordedCall],
    follow_up: str | None = None,
    retry_in_doubt: Callable[[str], bool] = lambda name: False,
) -> ResumePlan:
    """Continue run `run_id`, whose last request (of step `step`) was `request`.

    `answer` is the assistant message that answered it (None: the request is in doubt and
    is sent again); `calls` the recorded tool calls of that step. Each tool call of the
    answer gets its recorded result if it ended; if it is in doubt it is closed as
    interrupted and the model is told so, unless `retry_in_doubt(name)` says to run it
    again; a call never begun is dispatched by the new run. `follow_up` adds a user
    message; without one, a run whose answer was final ends with that answer.
    """
    history = list(request)
    sent = len(history)
    origin: JsonObject = {"runId": run_id, "step": step}
    in_doubt = tuple(call for call in calls if not call.ended)
    if answer is None:
        return ResumePlan(
            Opening(tuple(history), sent, follow_up=follow_up, resumed_from=origin), in_doubt
        )
    history.append(answer)  # as the loop keeps it: raw arguments and all
    unused = list(calls)
    pending: list[tuple[ToolCall, int]] = []
    for call in answer.tool_calls:
        recorded = _take(unused, call.id)
        if pending or recorded is None:
            pending.append((call, step))  # never begun: the new run dispatches it
        elif not recorded.ended and retry_in_doubt(call.name):
            pending.append((call, step))
        else:
            history.append(recorded.result_message(call))
    final = None if answer.tool_calls else answer.content
    opening = Opening(
        tuple(history),
        sent,
        pending=tuple(pending),
        follow_up=follow_up,
        final_text=final,
        resumed_from=origin,
    )
    return ResumePlan(opening, in_doubt)


def _take(calls: list[RecordedCall], tool_use_id: str) -> RecordedCall | None:
    """The latest record of the call: a later run that retried it knows its fate best."""
    for index in range(len(calls) - 1, -1, -1):
        if calls[index].tool_use_id == tool_use_id:
            return calls.pop(index)
    return None


def plan_fork(
    *,
    run_id: str,
    step: int,
    request: Sequence[Message],
    previous_request_size: int,
    instruction: str | None = None,
) -> Opening:
    """Branch run `run_id` off before step `step`'s request (`request`, as it was sent),
    optionally adding the user message `instruction`."""
    history = list(request)
    if instruction is not None:
        history.append(Message("user", instruction))
    return Opening(
        tuple(history), previous_request_size, forked_from={"runId": run_id, "step": step}
    )


def check_history(messages: Sequence[Message]) -> list[str]:
    """What makes a conversation invalid for a provider (empty: valid).

    The rules every provider enforces: a system message comes first and only there; every
    tool call of an assistant message is followed, before any other message, by exactly
    one tool result with its id; a tool result answers a call of the assistant message
    just before it.
    """
    problems: list[str] = []
    open_ids: list[str] = []
    for index, message in enumerate(messages):
        where = f"message {index + 1} ({message.role})"
        if message.role == "system" and index != 0:
            problems.append(f"{where}: a system message after the first")
        if message.role == "tool":
            if message.tool_call_id in open_ids:
                open_ids.remove(message.tool_call_id)
            else:
                problems.append(f"{where}: result {message.tool_call_id!r} answers no open call")
            continue
        if open_ids:
            problems.append(f"{where}: {_calls(open_ids)} unanswered before it")
            open_ids = []
        if message.role == "assistant":
            open_ids = [call.id for call in message.tool_calls]
    if open_ids:
        problems.append(f"the history ends with {_calls(open_ids)} unanswered")
    return problems


def _calls(ids: list[str]) -> str:
    return f"{'tool call' if len(ids) == 1 else 'tool calls'} {', '.join(ids)}"
