"""The one interface every model provider implements, in a provider-neutral message form.

A request is the whole conversation (system prompt first), the tool definitions and the
parameters; a response is one assistant message, why it ended, and token usage. Each
provider converts to and from its own wire format (OpenAI Chat Completions, Anthropic
Messages, a script, the mock) and runs its own retries; recording is the loop's. The
messages, tool calls and usage are the classes the events record (`mini_harness.events`),
so what a provider returns is what the transcript holds.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

import attrs

from mini_harness.errors import ModelError
from mini_harness.events import JsonObject, Message, ToolDefinition, Usage

__all__ = [
    "FINISH_REASONS",
    "MODEL_ERROR_KINDS",
    "ModelProvider",
    "ModelRequest",
    "ModelResponse",
]

FINISH_REASONS = frozenset({"stop", "tool_calls", "length", "content_filter", "other"})
"""Every provider maps its own stop reason onto one of these (Anthropic's `end_turn` is
`stop`, `tool_use` is `tool_calls`, `max_tokens` is `length`)."""

MODEL_ERROR_KINDS = frozenset(
    {
        "rate_limited",
        "timeout",
        "http_error",
        "auth",
        "invalid_response",
        "cancelled",
        "response_too_large",  # an answer over the transcript's line cap: not acted on
    }
)


@attrs.frozen
class ModelRequest:
    """What is sent: the whole conversation, the tool definitions and parameters such as
    `temperature` and `maxTokens`. The model's name is the provider's, not a parameter."""

    messages: tuple[Message, ...]
    tools: tuple[ToolDefinition, ...] = ()
    params: JsonObject = attrs.field(factory=dict)


@attrs.frozen
class ModelResponse:
    """What came back: one assistant message, the finish reason (one of FINISH_REASONS),
    usage, and the provider's response id when it gives one."""

    message: Message
    finish_reason: str
    usage: Usage = attrs.field(factory=Usage)
    response_id: str | None = None


class ModelProvider(Protocol):
    """A model behind one interface.

    `name` is what the CLI prints after "Model provider:" (`mock`, `script:demo.json`,
    `openai:gpt-4o-mini`, `deepseek:...`, `openai-compatible:...`, `anthropic:claude-...`: a
    `--model` that chooses it again); `model` is the model's name.

    `complete` sends one request. With `on_text`, text is streamed: each piece is passed
    as it arrives, and the returned response still holds the whole message. `on_retry` is
    called with a ModelError for each failed attempt that will be retried (the provider
    does the retrying, with its backoff), so that every attempt can be recorded; the last
    failure is raised as ModelError. Keys never appear in messages or errors.
    """

    name: str
    model: str

    def complete(
        self,
        request: ModelRequest,
        *,
        on_text: Callable[[str], None] | None = None,
        on_retry: Callable[[ModelError], None] | None = None,
    ) -> ModelResponse: ...
