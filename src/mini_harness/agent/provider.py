"""The one interface every model provider implements, in a provider-neutral message form.

A request is the whole conversation (system prompt first), the tool definitions and the
parameters; a response is one assistant message, why it ended, and token usage. Each
provider converts to and from its own wire format (OpenAI Chat Completions, Anthropic
Messages, a script, the mock) and runs its own retries; recording is the loop's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar, Literal, Protocol

import attrs

from mini_harness.errors import MiniHarnessError
from mini_harness.events import JsonObject, ToolDefinition

Role = Literal["system", "user", "assistant", "tool"]

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
class ToolCall:
    """A tool call as the model made it: its id, the tool's name, the raw argument text.

    `arguments` is exactly what the model sent (usually a JSON object's text, but it may
    not parse); the loop decodes and validates it, the transcript keeps it verbatim.
    """

    id: str
    name: str
    arguments: str

    def to_json(self) -> JsonObject:
        return {"id": self.id, "name": self.name, "arguments": self.arguments}

    @classmethod
    def from_json(cls, data: JsonObject) -> ToolCall:
        return cls(id=data["id"], name=data["name"], arguments=data["arguments"])


@attrs.frozen
class Message:
    """One message of a conversation.

    - system / user: `content` is the text.
    - assistant: `content` is its text ("" when it only called tools), `tool_calls` its calls.
    - tool: the result of the call `tool_call_id` (of tool `name`), as text; `is_error`
      when the call failed (the text then says why).
    """

    role: Role
    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    name: str | None = None
    is_error: bool = False

    def to_json(self) -> JsonObject:
        """The message as it is recorded (camelCase keys, defaults left out)."""
        out: JsonObject = {"role": self.role, "content": self.content}
        if self.tool_calls:
            out["toolCalls"] = [call.to_json() for call in self.tool_calls]
        if self.tool_call_id is not None:
            out["toolCallId"] = self.tool_call_id
        if self.name is not None:
            out["name"] = self.name
        if self.is_error:
            out["isError"] = True
        return out

    @classmethod
    def from_json(cls, data: JsonObject) -> Message:
        return cls(
            role=data["role"],
            content=data.get("content", ""),
            tool_calls=tuple(ToolCall.from_json(c) for c in data.get("toolCalls", ())),
            tool_call_id=data.get("toolCallId"),
            name=data.get("name"),
            is_error=bool(data.get("isError", False)),
        )


@attrs.frozen
class Usage:
    """Token counts as the provider reported them (None: not reported)."""

    input_tokens: int | None = None
    output_tokens: int | None = None
    cached_tokens: int | None = None
    KEYS: ClassVar[tuple[str, ...]] = ("inputTokens", "outputTokens", "cachedTokens")
    """The counts' keys as recorded, in the order of the fields."""

    def to_json(self) -> JsonObject:
        return dict(zip(self.KEYS, attrs.astuple(self), strict=True))

    @classmethod
    def from_json(cls, data: JsonObject) -> Usage:
        return cls(*(data.get(key) for key in cls.KEYS))

    def __add__(self, more: Usage) -> Usage:
        """Both counts summed; a count nobody reported stays None."""

        def plus(a: int | None, b: int | None) -> int | None:
            return b if a is None else a if b is None else a + b

        return Usage(*map(plus, attrs.astuple(self), attrs.astuple(more)))


@attrs.frozen
class ModelRequest:
    """What is sent: the whole conversation, the tools (name, description, inputSchema as
    `mini-harness tools --format json` prints them) and parameters such as `temperature`
    and `maxTokens`. The model's name is the provider's, not a parameter."""

    messages: tuple[Message, ...]
    tools: tuple[ToolDefinition, ...] = ()
    params: JsonObject = attrs.field(factory=dict)


@attrs.frozen
class ModelResponse:
    """What came back: one assistant message, the finish reason (one of FINISH_REASONS),
    usage, and the provider's response id when it gives one."""

    message: Message
    finish_reason: str
    usage: Usage = Usage()
    response_id: str | None = None


class ModelError(MiniHarnessError):
    """A model request failed; `kind` is one of MODEL_ERROR_KINDS, `status` the HTTP status
    when there was one, `attempt` which attempt (1-based) this was."""

    def __init__(
        self, kind: str, message: str, *, status: int | None = None, attempt: int = 1
    ) -> None:
        super().__init__(message)
        self.kind = kind
        self.status = status
        self.attempt = attempt


class ModelProvider(Protocol):
    """A model behind one interface.

    `name` is what the CLI prints after "Model provider:" (`mock`, `script:demo.json`,
    `openai-compatible:gpt-4o-mini`, `anthropic:claude-...`); `model` is the model's name.

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
