"""What a front end hears while an agent run goes on: each response, tool call and outcome;
and the tool result a model gets for each of its calls, whether run now or recorded."""

from __future__ import annotations

from typing import Protocol

import attrs

from mini_harness.agent.providers import ModelResponse
from mini_harness.errors import ModelError
from mini_harness.events import JsonValue, Message, ToolCall, tool_result_message


@attrs.frozen
class ToolOutcome:
    """One tool call's result as it went back to the model."""

    call: ToolCall
    message: Message
    output: JsonValue = None
    error: str | None = None


def call_outcome(
    call: ToolCall,
    *,
    output: JsonValue = None,
    error: str | None = None,
    imported: bool = False,
) -> ToolOutcome:
    """The tool result message of `call`: its output as compact JSON (for a call imported
    from another agent's session, as that agent gave it to its model), or, when it failed,
    `error`, the message its ToolFailed records, word for word, so the model can correct
    itself (events.tool_result_message)."""
    message = tool_result_message(call, output=output, error=error, imported=imported)
    if error is None:
        return ToolOutcome(call, message, output=output)
    return ToolOutcome(call, message, error=error)


class LoopReporter(Protocol):
    """What a front end is told while a run goes on (the CLI prints it).

    Steps count from 1; a tool run before the task (`AgentConfig.manual_tool`) is told as
    step 0. `waiting` comes as a request is sent and `waited` when it has ended (answered
    or failed), whatever came between (text, retries).
    """

    def waiting(self, step: int) -> None: ...
    def waited(self) -> None: ...
    def text(self, chunk: str) -> None: ...
    def response(self, step: int, response: ModelResponse, streamed: bool) -> None: ...
    def tool_called(self, step: int, call: ToolCall) -> None: ...
    def tool_done(self, step: int, outcome: ToolOutcome) -> None: ...
    def retry(self, error: ModelError) -> None: ...


class SilentReporter:
    """Tells nobody anything."""

    def waiting(self, step: int) -> None:
        return None

    def waited(self) -> None:
        return None

    def text(self, chunk: str) -> None:
        return None

    def response(self, step: int, response: ModelResponse, streamed: bool) -> None:
        return None

    def tool_called(self, step: int, call: ToolCall) -> None:
        return None

    def tool_done(self, step: int, outcome: ToolOutcome) -> None:
        return None

    def retry(self, error: ModelError) -> None:
        return None
