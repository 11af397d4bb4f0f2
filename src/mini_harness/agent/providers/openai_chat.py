"""OpenAI-compatible Chat Completions with tool calling, through the official `openai` SDK.

Imported only when this provider is chosen (the SDK is the optional `openai` extra).
Works with OpenAI, DeepSeek, vLLM, Ollama and llama.cpp servers: anything that speaks
`POST <base>/chat/completions`. Streams with `stream_options.include_usage` so streamed
responses report usage too.
"""

from __future__ import annotations

from typing import TypeVar, cast

import attrs
import openai
from openai import Omit, omit
from openai.types.chat import (
    ChatCompletion,
    ChatCompletionAssistantMessageParam,
    ChatCompletionChunk,
    ChatCompletionMessageFunctionToolCallParam,
    ChatCompletionMessageParam,
    ChatCompletionToolUnionParam,
)
from openai.types.completion_usage import CompletionUsage

from mini_harness.agent.providers.interface import FINISH_REASONS, ModelRequest
from mini_harness.agent.providers.sdk import (
    EventStream,
    ModelParams,
    RawResponse,
    ResponseParts,
    SdkProvider,
    arguments_text,
    checked_text,
)
from mini_harness.agent.providers.sdk_failures import SdkErrors
from mini_harness.events import Message, Usage
from mini_harness.runtime.definitions import openai_tool

_T = TypeVar("_T")


def _given(value: _T | None) -> _T | Omit:
    return omit if value is None else value


def to_wire_messages(messages: tuple[Message, ...]) -> list[ChatCompletionMessageParam]:
    """The neutral conversation as Chat Completions messages."""
    out: list[ChatCompletionMessageParam] = []
    for message in messages:
        if message.role == "assistant":
            entry: ChatCompletionAssistantMessageParam = {
                "role": "assistant",
                "content": message.content,
            }
            if message.tool_calls:
                entry["content"] = message.content or None
                entry["tool_calls"] = [
                    ChatCompletionMessageFunctionToolCallParam(
                        id=call.id,
                        type="function",
                        function={"name": call.name, "arguments": arguments_text(call.arguments)},
                    )
                    for call in message.tool_calls
                ]
            out.append(entry)
        elif message.role == "tool":
            call_id = message.tool_call_id or ""
            out.append({"role": "tool", "tool_call_id": call_id, "content": message.content})
        elif message.role == "system":
            out.append({"role": "system", "content": message.content})
        else:
            out.append({"role": "user", "content": message.content})
    return out


def finish_reason(wire: str | None, has_tool_calls: bool) -> str:
    """The neutral finish reason: the API's own name, the legacy "function_call" and a
    "stop" that carries tool calls (some servers say "stop" there) read as "tool_calls"."""
    if wire == "function_call" or (wire == "stop" and has_tool_calls):
        return "tool_calls"
    return wire if wire is not None and wire in FINISH_REASONS else "other"


def usage_of(usage: CompletionUsage | None) -> Usage:
    if usage is None:
        return Usage()
    cached = None
    if usage.prompt_tokens_details is not None:
        cached = usage.prompt_tokens_details.cached_tokens
    if cached is None:
        # DeepSeek reports its cache hits under a name of its own.
        extra = (usage.model_extra or {}).get("prompt_cache_hit_tokens")
        cached = extra if isinstance(extra, int) else None
    return Usage(
        input_tokens=usage.prompt_tokens,
        output_tokens=usage.completion_tokens,
        cached_tokens=cached,
    )


def _slot(parts: ResponseParts, index: object, call_id: str) -> int:
    """Which call a streamed fragment belongs to: its `index`; from servers that leave the
    index out, a new call when it brings a new id, else the latest call."""
    if isinstance(index, int):
        return index
    calls = parts.calls
    if not calls or (call_id and all(c["id"] != call_id for c in calls.values())):
        return len(calls)
    return max(calls)


@attrs.frozen
class ChatBody:
    """A Chat Completions request in the SDK's types."""

    messages: list[ChatCompletionMessageParam]
    tools: list[ChatCompletionToolUnionParam]
    params: ModelParams


class OpenAICompatibleProvider(SdkProvider[ChatBody, ChatCompletion, ChatCompletionChunk]):
    """A Chat Completions server behind the provider interface (`openai-compatible:MODEL`)."""

    errors = SdkErrors(
        root=openai.OpenAIError,
        api=openai.APIError,
        status=openai.APIStatusError,
        connection=openai.APIConnectionError,
        timeout=openai.APITimeoutError,
        rate_limit=openai.RateLimitError,
        auth=(openai.AuthenticationError, openai.PermissionDeniedError),
    )
    provider_name = "openai-compatible"

    def _connect(self, *, api_key: str, base_url: str | None, timeout: float) -> None:
        self._client = openai.OpenAI(
            api_key=api_key, base_url=base_url, timeout=timeout, max_retries=0
        )

    def _body(self, request: ModelRequest) -> ChatBody:
        # The tools' wire form is the definitions' own (what `tools --format openai` prints).
        tools = [cast(ChatCompletionToolUnionParam, openai_tool(tool)) for tool in request.tools]
        return ChatBody(to_wire_messages(request.messages), tools, ModelParams.of(request.params))

    def _send_whole(self, body: ChatBody) -> RawResponse[ChatCompletion]:
        params = body.params
        return self._client.chat.completions.with_raw_response.create(
            model=self.model,
            messages=body.messages,
            tools=body.tools or omit,
            temperature=_given(params.temperature),
            max_tokens=_given(params.max_tokens),
            top_p=_given(params.top_p),
            stop=_given(params.stop),
        )

    def _send_stream(self, body: ChatBody) -> RawResponse[EventStream[ChatCompletionChunk]]:
        params = body.params
        return self._client.chat.completions.with_raw_response.create(
            model=self.model,
            messages=body.messages,
            tools=body.tools or omit,
            temperature=_given(params.temperature),
            max_tokens=_given(params.max_tokens),
            top_p=_given(params.top_p),
            stop=_given(params.stop),
            stream=True,
            stream_options={"include_usage": True},
        )

    def _read_whole(self, completion: ChatCompletion, parts: ResponseParts) -> None:
        if not completion.choices:
            raise ValueError("the model server answered with no choices")
        choice = completion.choices[0]
        parts.add_text(choice.message.content)
        for index, call in enumerate(choice.message.tool_calls or ()):
            if call.type == "function":
                parts.add_call(index, call.id, call.function.name, call.function.arguments)
        parts.usage, parts.response_id = usage_of(completion.usage), completion.id or None
        parts.finish, parts.ended = checked_text(choice.finish_reason) or None, True

    def _read_event(self, chunk: ChatCompletionChunk, parts: ResponseParts) -> None:
        parts.response_id = parts.response_id or chunk.id or None
        if chunk.usage is not None:
            parts.usage = usage_of(chunk.usage)
        for choice in chunk.choices:
            if choice.index != 0:
                continue
            parts.add_text(choice.delta.content)
            for fragment in choice.delta.tool_calls or ():
                call_id = checked_text(fragment.id)
                call = parts.call(_slot(parts, getattr(fragment, "index", None), call_id))
                call["id"] = call["id"] or call_id
                if fragment.function is not None:
                    # The name comes whole, once; a server repeating it is not doubled.
                    call["name"] = call["name"] or checked_text(fragment.function.name)
                    call["arguments"] += checked_text(fragment.function.arguments)
            if choice.finish_reason is not None:
                # A stream is whole once the server gave its finish reason.
                parts.finish, parts.ended = checked_text(choice.finish_reason), True

    def _finish_reason(self, parts: ResponseParts) -> str:
        return finish_reason(parts.finish, bool(parts.calls))
