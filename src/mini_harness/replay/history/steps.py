"""An agent run's step: one model request, its response and failed attempts, the calls
it made, and the whole request rebuilt from the events when the fold rebuilds it."""

from __future__ import annotations

import attrs

from mini_harness.agent import ModelRequest, ModelResponse, request_hash
from mini_harness.errors import ReplayError
from mini_harness.events import ModelFailed, ModelRequested, ModelResponded, ToolCall, Usage
from mini_harness.replay.history.calls import FAILED, IN_DOUBT, SUCCEEDED, Call
from mini_harness.transcripts import TranscriptRecord


@attrs.define(eq=False)
class Step:
    """One step of an agent run: its model request (`requested`; None for a step seen
    only through calls dispatched before a continued run's first request), the response,
    each failed attempt, and the calls the step made.

    `request` is the whole request rebuilt from the events (when the fold rebuilds them:
    else reading it is a ReplayError);
    `others` the step's other events as read (ContextTrimmed, unknown types) and `records`
    its model events as read, both kept only with the detail.
    """

    number: int
    requested: ModelRequested | None = None
    response: ModelResponded | None = None
    failures: list[ModelFailed] = attrs.Factory(list)
    calls: list[Call] = attrs.Factory(list)
    rebuilt: ModelRequest | None = None
    others: list[TranscriptRecord] = attrs.Factory(list)
    records: list[TranscriptRecord] = attrs.Factory(list)

    @property
    def status(self) -> str:
        """How its model turn ended: succeeded (a response), failed (only failed
        attempts) or in-doubt (a request and nothing after it)."""
        if self.response is not None:
            return SUCCEEDED
        return FAILED if self.failures else IN_DOUBT

    @property
    def text(self) -> str:
        """The response's text ("" without one)."""
        return self.response.message.content if self.response is not None else ""

    @property
    def tool_calls(self) -> tuple[ToolCall, ...]:
        """The calls the model asked for in its response."""
        return self.response.message.tool_calls if self.response is not None else ()

    @property
    def usage(self) -> Usage | None:
        return self.response.usage if self.response is not None else None

    @property
    def recorded_hash(self) -> str | None:
        return self.requested.request_hash if self.requested is not None else None

    @property
    def request(self) -> ModelRequest:
        """Its whole request, as sent."""
        if self.rebuilt is None:
            raise ReplayError(f"the request of step {self.number} was not rebuilt")
        return self.rebuilt

    @property
    def hash_matches(self) -> bool:
        """Whether the rebuilt request hashes to the recorded `requestHash`."""
        return self.rebuilt is not None and request_hash(self.rebuilt) == self.recorded_hash

    def model_response(self) -> ModelResponse | None:
        """The response as the provider gave it to the loop."""
        response = self.response
        if response is None:
            return None
        return ModelResponse(
            response.message, response.finish_reason, response.usage, response.response_id
        )
