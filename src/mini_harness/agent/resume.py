"""Continuing a recorded agent run: its tool calls as recorded, and the history check.

Each tool call of a run is ended (its recorded result is used, never run again), in doubt
(begun, never ended: the process died while it ran) or never begun. `check_history` says
whether a rebuilt history is one every provider accepts: every tool call gets exactly one
result. Reading the transcript and planning the new run is replay's job
(replay.continuation).
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from mini_harness.agent.provider import Message, ToolCall
from mini_harness.agent.reporting import call_outcome
from mini_harness.events import JsonObject, JsonValue

INTERRUPTED_RESULT = (
    "Tool {name} was interrupted: the run ended before the call finished, so it may or may "
    "not have taken effect (closed by `mini-harness resume`)"
)
"""What a call in doubt is closed with, in the transcript and in the model's history."""


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
            text = INTERRUPTED_RESULT.format(name=self.name)
            return call_outcome(call, error=("interrupted", text)).message
        if self.error is not None:
            error = (str(self.error.get("kind")), str(self.error.get("message")))
            return call_outcome(call, error=error).message
        return call_outcome(call, output=self.output).message


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
