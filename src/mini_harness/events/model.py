"""Model events: what an agent run records about its model requests and how it ended.

A run's requests are rebuilt from these alone: the first `ModelRequested` holds the whole
opening conversation, every later one only the messages added since the previous request
(the assistant message as it went into the history, then its tool results), and
`ContextTrimmed` says which earlier messages the budget replaced and with what. Each
request's `requestHash` lets a reader check the rebuild.
"""

from __future__ import annotations

import attrs

from mini_harness.events.jsonvalue import JsonObject


@attrs.frozen
class ModelRequested:
    """A model request is about to be sent (recorded before it is).

    `messages` are the messages added to the conversation since this run's previous
    request (all of them for step 1), in the provider-neutral form of
    `mini_harness.agent.Message.to_json`; `params` the request's parameters;
    `request_hash` the SHA-256 of the canonical full request (messages, tools, params).
    """

    ts: str
    run_id: str
    step: int
    request_id: str
    messages: tuple[JsonObject, ...]
    params: JsonObject
    request_hash: str


@attrs.frozen
class ModelResponded:
    """The model answered `request_id`: the assistant `message` (its tool calls with the
    model's ids and raw argument text), the finish reason, usage and timing."""

    ts: str
    run_id: str
    request_id: str
    message: JsonObject
    finish_reason: str
    usage: JsonObject
    duration_ms: float
    response_id: str | None = None


@attrs.frozen
class ModelFailed:
    """One attempt at `request_id` failed: `error` has `kind` (a model error kind),
    `status` (HTTP, or null) and `message`. A retried attempt and the final failure each
    get one."""

    ts: str
    run_id: str
    request_id: str
    error: JsonObject
    attempt: int
    duration_ms: float


@attrs.frozen
class ContextTrimmed:
    """Before step `step`'s request, the budget replaced earlier messages.

    Each entry of `replaced` has `index` (the message's position in the conversation),
    `toolCallId`, `name`, `tokens` (the estimate of what was dropped) and `content` (the
    placeholder now in its place). `tokens_before` / `tokens_after` are the request's
    estimates, `budget` the limit.
    """

    ts: str
    run_id: str
    step: int
    replaced: tuple[JsonObject, ...]
    tokens_before: int
    tokens_after: int
    budget: int


@attrs.frozen
class RunFinished:
    """An agent run ended: `stop_reason` is final, max_steps, model_error, budget or
    cancelled; `final_text` the answer (null without one), `steps` the model requests made,
    `usage` the summed token counts."""

    ts: str
    run_id: str
    stop_reason: str
    final_text: str | None
    steps: int
    usage: JsonObject
