"""Anthropic Messages with tool use, through the official `anthropic` SDK.

Imported only when this provider is chosen (the SDK is the optional `anthropic` extra).
The system prompt goes in the `system` parameter; tool results go back as `tool_result`
blocks in a user message, consecutive ones merged, so roles keep alternating.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Literal, TypeVar, cast

import anthropic
import attrs
from anthropic import Omit, omit
from anthropic.types import (
    AssistantMessageParam,
    MessageDeltaUsage,
    MessageParam,
    RawMessageStreamEvent,
    TextBlockParam,
    ToolResultBlockParam,
    ToolUnionParam,
    ToolUseBlockParam,
    UserMessageParam,
)
from anthropic.types import Message as WireMessage
from anthropic.types import Usage as WireUsage

from mini_harness.agent.providers.interface import ModelRequest
from mini_harness.agent.providers.sdk import (
    EventStream,
    ModelParams,
    RawResponse,
    ResponseParts,
    SdkProvider,
    arguments_object,
    checked_text,
)
from mini_harness.agent.providers.sdk_failures import SdkErrors
from mini_harness.events import Message, Usage
from mini_harness.runtime.definitions import anthropic_tool

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

Block = TextBlockParam | ToolUseBlockParam | ToolResultBlockParam
_T = TypeVar("_T")


def _given(value: _T | None) -> _T | Omit:
    return omit if value is None else value


def _blocks(message: Message) -> list[Block]:
    if message.role == "tool":
        result: ToolResultBlockParam = {
            "type": "tool_result",
            "tool_use_id": message.tool_call_id or "",
            "content": message.content,
        }
        if message.is_error:
            result["is_error"] = True
        return [result]
    blocks: list[Block] = []
    if message.content:
        blocks.append({"type": "text", "text": message.content})
    blocks.extend(
        ToolUseBlockParam(
            type="tool_use", id=call.id, name=call.name, input=arguments_object(call.arguments)
        )
        for call in message.tool_calls
    )
    return blocks


def to_wire(messages: Iterable[Message]) -> tuple[str, list[MessageParam]]:
    """The system prompt and the Messages-API conversation for the neutral messages.

    Tool results become user turns; consecutive turns of one role are merged, tool
    results first, so that roles alternate as the API requires; empty messages are left
    out.
    """
    system: list[str] = []
    turns: list[tuple[Literal["user", "assistant"], list[Block]]] = []
    for message in messages:
        if message.role == "system":
            system.append(message.content)
            continue
        role: Literal["user", "assistant"] = "assistant" if message.role == "assistant" else "user"
        blocks = _blocks(message)
        if not blocks:
            # The API refuses empty messages and empty text blocks: an empty reply (a
            # response cut at zero tokens) carries nothing the model needs to see again.
            continue
        if turns and turns[-1][0] == role:
            turns[-1][1].extend(blocks)
        else:
            turns.append((role, blocks))
    out: list[MessageParam] = []
    for role, blocks in turns:
        # tool_result blocks must open their user turn.
        blocks.sort(key=lambda block: block["type"] != "tool_result")
        if role == "user":
            out.append(UserMessageParam(role="user", content=blocks))
        else:
            out.append(AssistantMessageParam(role="assistant", content=blocks))
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


def _extra_body(params: ModelParams) -> dict[str, object] | None:
    # anthropic 2.x's create() no longer takes these as arguments: they go in the body.
    body = {"temperature": params.temperature, "top_p": params.top_p}
    given: dict[str, object] = {k: v for k, v in body.items() if v is not None}
    return given or None


@attrs.frozen
class MessagesBody:
    """A Messages API request in the SDK's types."""

    system: str
    messages: list[MessageParam]
    tools: list[ToolUnionParam]
    params: ModelParams


class AnthropicProvider(SdkProvider[MessagesBody, WireMessage, RawMessageStreamEvent]):
    """Anthropic's Messages API behind the provider interface (`anthropic:MODEL`)."""

    errors = SdkErrors(
        root=anthropic.AnthropicError,
        api=anthropic.APIError,
        status=anthropic.APIStatusError,
        connection=anthropic.APIConnectionError,
        timeout=anthropic.APITimeoutError,
        rate_limit=anthropic.RateLimitError,
        auth=(anthropic.AuthenticationError, anthropic.PermissionDeniedError),
    )
    provider_name = "anthropic"
    empty_arguments = "{}"  # a tool called without input streams no input_json_delta

    def _connect(self, *, api_key: str, base_url: str | None, timeout: float) -> None:
        self._client = anthropic.Anthropic(
            api_key=api_key,
            base_url=base_url,
            timeout=timeout,
            max_retries=0,
            open_telemetry=False,
        )

    def _body(self, request: ModelRequest) -> MessagesBody:
        system, messages = to_wire(request.messages)
        # The tools' wire form is the definitions' own (`tools --format anthropic`).
        tools = [cast(ToolUnionParam, anthropic_tool(tool)) for tool in request.tools]
        return MessagesBody(system, messages, tools, ModelParams.of(request.params))

    def _send_whole(self, body: MessagesBody) -> RawResponse[WireMessage]:
        params = body.params
        return self._client.messages.with_raw_response.create(
            model=self.model,
            max_tokens=params.max_tokens or DEFAULT_MAX_TOKENS,
            messages=body.messages,
            system=body.system or omit,
            tools=body.tools or omit,
            stop_sequences=_given(params.stop),
            extra_body=_extra_body(params),
        )

    def _send_stream(self, body: MessagesBody) -> RawResponse[EventStream[RawMessageStreamEvent]]:
        params = body.params
        return self._client.messages.with_raw_response.create(
            model=self.model,
            max_tokens=params.max_tokens or DEFAULT_MAX_TOKENS,
            messages=body.messages,
            system=body.system or omit,
            tools=body.tools or omit,
            stop_sequences=_given(params.stop),
            extra_body=_extra_body(params),
            stream=True,
        )

    def _read_whole(self, message: WireMessage, parts: ResponseParts) -> None:
        for index, block in enumerate(message.content):
            if block.type == "text":
                parts.add_text(block.text)
            elif block.type == "tool_use":
                arguments = json.dumps(block.input, ensure_ascii=False, separators=(",", ":"))
                parts.add_call(index, block.id, block.name, arguments)
        parts.usage, parts.response_id = usage_of(message.usage), message.id or None
        parts.finish, parts.ended = message.stop_reason, True

    def _read_event(self, event: RawMessageStreamEvent, parts: ResponseParts) -> None:
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
            parts.finish = event.delta.stop_reason or parts.finish
            parts.usage = usage_of(event.usage, parts.usage)
        elif event.type == "message_stop":
            parts.ended = True

    def _finish_reason(self, parts: ResponseParts) -> str:
        return stop_reason(parts.finish)
