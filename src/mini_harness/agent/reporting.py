"""What a front end hears while an agent run goes on: each response, tool call and outcome."""

from __future__ import annotations

from typing import Protocol

import attrs

from mini_harness.agent.provider import Message, ModelError, ModelResponse, ToolCall
from mini_harness.events import JsonValue


@attrs.frozen
class ToolOutcome:
    """One tool call's result as it went back to the model."""

    call: ToolCall
    message: Message
    output: JsonValue = None
    error: str | None = None


class LoopReporter(Protocol):
    """What a front end is told while a run goes on (the CLI prints it).

    Steps count from 1; a tool run before the task (`AgentConfig.manual_tool`) is told as
    step 0.
    """

    def text(self, chunk: str) -> None: ...
    def response(self, step: int, response: ModelResponse, streamed: bool) -> None: ...
    def tool_called(self, step: int, call: ToolCall) -> None: ...
    def tool_done(self, step: int, outcome: ToolOutcome) -> None: ...
    def retry(self, error: ModelError) -> None: ...


class SilentReporter:
    """Tells nobody anything."""

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
