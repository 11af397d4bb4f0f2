"""Anthropic Messages with tool use, through the official `anthropic` SDK.

Imported only when this provider is chosen (the SDK is the optional `anthropic` extra).
The system prompt goes in the `system` parameter; tool results go back as `tool_result`
blocks in a user message, consecutive ones merged, so roles keep alternating.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Literal, TypedDict, TypeVar, cast

import anthropic
from anthropic import Omit, omit
from anthropic.types import (
    AssistantMessageParam,
    InputJSONDelta,
    MessageDeltaUsage,
    MessageParam,
    RawContentBlockDeltaEvent,
    RawContentBlockStartEvent,
    RawMessageDeltaEvent,
    RawMessageStartEvent,
    RawMessageStreamEvent,
    TextBlock,
    TextBlockParam,
    TextDelta,
    ToolResultBlockParam,
    ToolUnionParam,
    ToolUseBlock,
    ToolUseBlockParam,
    UserMessageParam,
)
from anthropic.types import Message as WireMessage
from anthropic.types import Usage as WireUsage
from anthropic.types.raw_message_delta_event import Delta

from mini_harness.agent.providers.interface import ModelRequest
from mini_harness.agent.providers.remote import WIRES
from mini_harness.agent.providers.sdk import (
    EventStream,
    ModelParams,
    RawResponse,
    ResponseParts,
    SdkProvider,
    arguments_object,
    count,
    listed,
    model,
    text,
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


def to_wire_messages(messages: Iterable[Message]) -> tuple[str, list[MessageParam]]:
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
    fresh = count(usage.input_tokens, "input_tokens")
    read = count(usage.cache_read_input_tokens, "cache_read_input_tokens")
    written = count(usage.cache_creation_input_tokens, "cache_creation_input_tokens")
    input_tokens = previous.input_tokens
    if fresh is not None:
        input_tokens = fresh + (read or 0) + (written or 0)
    return Usage(
        input_tokens=input_tokens,
        output_tokens=count(usage.output_tokens, "output_tokens"),
        cached_tokens=read if read is not None else previous.cached_tokens,
    )


def _kind(value: object, what: str) -> str:
    """The `type` of an object of a response (a content block, a stream event, a delta)."""
    return text(getattr(model(value, anthropic.BaseModel, what), "type", None), f"{what}'s type")


def _extra_body(params: ModelParams) -> dict[str, object] | None:
    # anthropic 2.x's create() no longer takes these as arguments: they go in the body.
    body = {"temperature": params.temperature, "top_p": params.top_p}
    given: dict[str, object] = {k: v for k, v in body.items() if v is not None}
    return given or None


class MessagesArguments(TypedDict):
    """What `messages.create` is given for a request, in the SDK's types: built once per
    request, and sent for a whole response or a stream."""

    model: str
    max_tokens: int
    messages: list[MessageParam]
    system: str | Omit
    tools: list[ToolUnionParam] | Omit
    stop_sequences: list[str] | Omit
    extra_body: dict[str, object] | None


class AnthropicProvider(SdkProvider[MessagesArguments, WireMessage, RawMessageStreamEvent]):
    """Anthropic's Messages API behind the provider interface (`anthropic:MODEL`)."""

    errors = SdkErrors.of(anthropic, anthropic.AnthropicError)
    provider_name = WIRES["anthropic"].name
    empty_arguments = "{}"  # a tool called without input streams no input_json_delta

    def _connect(self, *, api_key: str, base_url: str | None, timeout: float) -> None:
        self._client = anthropic.Anthropic(
            api_key=api_key,
            base_url=base_url,
            timeout=timeout,
            max_retries=0,
            open_telemetry=False,
        )

    def _body(self, request: ModelRequest) -> MessagesArguments:
        params = ModelParams.of(request.params)
        system, messages = to_wire_messages(request.messages)
        # The tools' wire form is the definitions' own (`tools --format anthropic`).
        tools = [cast(ToolUnionParam, anthropic_tool(tool)) for tool in request.tools]
        return MessagesArguments(
            model=self.model,
            max_tokens=params.max_tokens or DEFAULT_MAX_TOKENS,
            messages=messages,
            system=system or omit,
            tools=tools or omit,
            stop_sequences=_given(params.stop),
            extra_body=_extra_body(params),
        )

    def _send_whole(self, body: MessagesArguments) -> RawResponse[WireMessage]:
        return self._client.messages.with_raw_response.create(**body)

    def _send_stream(
        self, body: MessagesArguments
    ) -> RawResponse[EventStream[RawMessageStreamEvent]]:
        return self._client.messages.with_raw_response.create(**body, stream=True)

    def _read_whole(self, message: WireMessage, parts: ResponseParts) -> None:
        message = model(message, WireMessage, "the response")
        for index, block in enumerate(listed(message.content, "content")):
            kind = _kind(block, f"content[{index}]")
            if kind == "text":
                parts.add_text(model(block, TextBlock, f"content[{index}]").text)
            elif kind == "tool_use":
                call = model(block, ToolUseBlock, f"content[{index}]")
                arguments = json.dumps(call.input, ensure_ascii=False, separators=(",", ":"))
                parts.add_call(index, call.id, call.name, arguments)
        parts.usage = usage_of(model(message.usage, WireUsage, "usage"))
        parts.response_id = text(message.id, "id") or None
        parts.finish, parts.ended = text(message.stop_reason, "stop_reason") or None, True

    def _read_event(self, event: RawMessageStreamEvent, parts: ResponseParts) -> None:
        kind = _kind(event, "a stream event")
        if kind == "message_start":
            started = model(event, RawMessageStartEvent, kind)
            message = model(started.message, WireMessage, "message_start.message")
            parts.response_id = text(message.id, "id") or None
            parts.usage = usage_of(model(message.usage, WireUsage, "usage"))
        elif kind == "content_block_start":
            start = model(event, RawContentBlockStartEvent, kind)
            index = count(start.index, "index")
            block_kind = _kind(start.content_block, "content_block")
            if block_kind == "tool_use":
                call = model(start.content_block, ToolUseBlock, "content_block")
                parts.add_call(index or 0, call.id, call.name)
            elif block_kind == "text":
                parts.add_text(model(start.content_block, TextBlock, "content_block").text)
        elif kind == "content_block_delta":
            delta_event = model(event, RawContentBlockDeltaEvent, kind)
            delta_kind = _kind(delta_event.delta, "delta")
            if delta_kind == "text_delta":
                parts.add_text(model(delta_event.delta, TextDelta, "delta").text)
            elif delta_kind == "input_json_delta" and delta_event.index in parts.calls:
                json_delta = model(delta_event.delta, InputJSONDelta, "delta")
                arguments = text(json_delta.partial_json, "partial_json")
                parts.calls[delta_event.index]["arguments"] += arguments
        elif kind == "message_delta":
            ended = model(event, RawMessageDeltaEvent, kind)
            stopped = model(ended.delta, Delta, "message_delta.delta")
            parts.finish = text(stopped.stop_reason, "stop_reason") or parts.finish
            usage = model(ended.usage, MessageDeltaUsage, "message_delta.usage")
            parts.usage = usage_of(usage, parts.usage)
        elif kind == "message_stop":
            parts.ended = True

    def _finish_reason(self, parts: ResponseParts) -> str:
        return stop_reason(parts.finish)
