"""Anthropic Messages with tool use, through the official `anthropic` SDK.

Imported only when this provider is chosen (the SDK is the optional `anthropic` extra).
The system prompt goes in the `system` parameter; tool results go back as `tool_result`
blocks in a user message, consecutive ones merged, so roles keep alternating.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

import anthropic

from mini_harness.agent.provider import Message, ModelRequest, ModelResponse, Usage
from mini_harness.agent.sdk_provider import (
    ResponseParts,
    SdkProvider,
    arguments_object,
    checked_text,
    wire_params,
)
from mini_harness.runtime.definitions import ToolDefinition

if TYPE_CHECKING:
    from anthropic.types import Message as WireMessage
    from anthropic.types import MessageDeltaUsage, RawMessageStreamEvent
    from anthropic.types import Usage as WireUsage

DEFAULT_MAX_TOKENS = 4096
"""Anthropic requires `max_tokens`; this is used when the request's params give none."""

_STOP = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "refusal": "content_filter",
}

_BODY_ONLY = ("temperature", "top_p")
_PARAMS = {
    "temperature": "temperature",
    "maxTokens": "max_tokens",
    "topP": "top_p",
    "stop": "stop_sequences",
}


def _blocks(message: Message) -> list[dict[str, Any]]:
    if message.role == "tool":
        block: dict[str, Any] = {
            "type": "tool_result",
            "tool_use_id": message.tool_call_id,
            "content": message.content,
        }
        if message.is_error:
            block["is_error"] = True
        return [block]
    blocks: list[dict[str, Any]] = []
    if message.content:
        blocks.append({"type": "text", "text": message.content})
    for call in message.tool_calls:
        blocks.append(
            {
                "type": "tool_use",
                "id": call.id,
                "name": call.name,
                "input": arguments_object(call.arguments),
            }
        )
    return blocks


def to_wire(messages: Iterable[Message]) -> tuple[str, list[dict[str, Any]]]:
    """The system prompt and the Messages-API conversation for the neutral messages.

    Tool results become user turns; consecutive turns of one role are merged, tool
    results first, so that roles alternate as the API requires; empty messages are left
    out.
    """
    system: list[str] = []
    out: list[dict[str, Any]] = []
    for message in messages:
        if message.role == "system":
            system.append(message.content)
            continue
        role = "assistant" if message.role == "assistant" else "user"
        blocks = _blocks(message)
        if not blocks:
            # The API refuses empty messages and empty text blocks: an empty reply (a
            # response cut at zero tokens) carries nothing the model needs to see again.
            continue
        if out and out[-1]["role"] == role:
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": role, "content": blocks})
    for turn in out:
        # tool_result blocks must open their user turn.
        turn["content"].sort(key=lambda block: block["type"] != "tool_result")
    return "\n\n".join(system), out


def stop_reason(wire: str | None) -> str:
    return _STOP.get(wire or "", "other")


def usage_of(usage: WireUsage | MessageDeltaUsage, previous: Usage | None = None) -> Usage:
    """Neutral usage; input tokens count the whole prompt (Anthropic reports cache reads
    and cache writes apart from `input_tokens`), cached tokens are the cache reads."""
    previous = previous or Usage()
    fresh = usage.input_tokens
    read = usage.cache_read_input_tokens
    written = usage.cache_creation_input_tokens
    input_tokens = previous.input_tokens
    if fresh is not None:
        input_tokens = fresh + (read or 0) + (written or 0)
    return Usage(
        input_tokens=input_tokens,
        output_tokens=usage.output_tokens,
        cached_tokens=read if read is not None else previous.cached_tokens,
    )


class AnthropicProvider(SdkProvider):
    """Anthropic's Messages API behind the provider interface (`anthropic:MODEL`)."""

    sdk_error = anthropic.AnthropicError
    stream_arguments = {"stream": True}  # noqa: RUF012
    provider_name = "anthropic"

    def _connect(self, **settings: Any) -> Callable[..., Any]:
        return anthropic.Anthropic(**settings, open_telemetry=False).messages.create

    def _arguments(self, request: ModelRequest) -> dict[str, Any]:
        system, messages = to_wire(request.messages)
        kwargs = {"max_tokens": DEFAULT_MAX_TOKENS, **wire_params(request.params, _PARAMS)}
        # anthropic 2.x's create() no longer takes these as arguments: they go in the body.
        body = {key: kwargs.pop(key) for key in _BODY_ONLY if key in kwargs}
        if body:
            kwargs["extra_body"] = body
        kwargs.update(model=self.model, messages=messages)
        if system:
            kwargs["system"] = system
        if request.tools:
            kwargs["tools"] = [
                ToolDefinition.from_json(tool).to_anthropic() for tool in request.tools
            ]
        return kwargs

    def _read(self, message: WireMessage, parts: ResponseParts) -> ModelResponse:
        for index, block in enumerate(message.content):
            if block.type == "text":
                parts.add_text(block.text)
            elif block.type == "tool_use":
                arguments = json.dumps(block.input, ensure_ascii=False, separators=(",", ":"))
                parts.add_call(index, block.id, block.name, arguments)
        parts.usage, parts.response_id = usage_of(message.usage), message.id or None
        return parts.response(stop_reason(message.stop_reason))

    def _read_stream(
        self, stream: Iterable[RawMessageStreamEvent], parts: ResponseParts
    ) -> ModelResponse:
        wire_stop: str | None = None
        finished = False
        for event in stream:
            if event.type == "message_start":
                parts.response_id = event.message.id or None
                parts.usage = usage_of(event.message.usage)
            elif event.type == "content_block_start":
                block = event.content_block
                if block.type == "tool_use":
                    parts.add_call(event.index, block.id, block.name)
                elif block.type == "text":
                    parts.add_text(block.text)
            elif event.type == "content_block_delta":
                delta = event.delta
                if delta.type == "text_delta":
                    parts.add_text(delta.text)
                elif delta.type == "input_json_delta" and event.index in parts.calls:
                    parts.calls[event.index]["arguments"] += checked_text(delta.partial_json)
            elif event.type == "message_delta":
                wire_stop = event.delta.stop_reason or wire_stop
                parts.usage = usage_of(event.usage, parts.usage)
            elif event.type == "message_stop":
                finished = True
        # A tool called without input streams no input_json_delta at all.
        return parts.response(stop_reason(wire_stop) if finished else None, "{}")
