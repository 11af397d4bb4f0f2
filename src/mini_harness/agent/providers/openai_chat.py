"""OpenAI-compatible Chat Completions with tool calling, through the official `openai` SDK.

Imported only when this provider is chosen (the SDK is the optional `openai` extra).
Works with OpenAI, DeepSeek, vLLM, Ollama and llama.cpp servers: anything that speaks
`POST <base>/chat/completions`. Streams with `stream_options.include_usage` so streamed
responses report usage too.
"""

from __future__ import annotations

from typing import TypedDict, TypeVar, cast

import openai
from openai import Omit, omit
from openai.types.chat import (
    ChatCompletion,
    ChatCompletionAssistantMessageParam,
    ChatCompletionChunk,
    ChatCompletionMessage,
    ChatCompletionMessageFunctionToolCall,
    ChatCompletionMessageFunctionToolCallParam,
    ChatCompletionMessageParam,
    ChatCompletionToolUnionParam,
)
from openai.types.chat.chat_completion import Choice
from openai.types.chat.chat_completion_chunk import Choice as ChunkChoice
from openai.types.chat.chat_completion_chunk import (
    ChoiceDelta,
    ChoiceDeltaToolCall,
    ChoiceDeltaToolCallFunction,
)
from openai.types.chat.chat_completion_message_function_tool_call import Function
from openai.types.completion_usage import CompletionUsage, PromptTokensDetails

from mini_harness.agent.providers.interface import FINISH_REASONS, ModelRequest
from mini_harness.agent.providers.remote import WIRES
from mini_harness.agent.providers.sdk import (
    EventStream,
    ModelParams,
    RawResponse,
    ResponseParts,
    SdkProvider,
    arguments_text,
    count,
    listed,
    model,
    text,
)
from mini_harness.agent.providers.sdk_failures import SdkErrors
from mini_harness.errors import ResponseShapeError
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


def usage_of(usage: object) -> Usage:
    if usage is None:
        return Usage()
    usage = model(usage, CompletionUsage, "usage")
    cached = None
    if usage.prompt_tokens_details is not None:
        details = model(usage.prompt_tokens_details, PromptTokensDetails, "prompt_tokens_details")
        cached = count(details.cached_tokens, "cached_tokens")
    if cached is None:
        # DeepSeek reports its cache hits under a name of its own.
        extra = (usage.model_extra or {}).get("prompt_cache_hit_tokens")
        cached = extra if type(extra) is int and extra >= 0 else None
    return Usage(
        input_tokens=count(usage.prompt_tokens, "prompt_tokens"),
        output_tokens=count(usage.completion_tokens, "completion_tokens"),
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


class ChatArguments(TypedDict):
    """What `chat.completions.create` is given for a request, in the SDK's types: built
    once per request, and sent for a whole response or a stream."""

    model: str
    messages: list[ChatCompletionMessageParam]
    tools: list[ChatCompletionToolUnionParam] | Omit
    temperature: float | Omit
    max_tokens: int | Omit
    top_p: float | Omit
    stop: list[str] | Omit


class OpenAICompatibleProvider(SdkProvider[ChatArguments, ChatCompletion, ChatCompletionChunk]):
    """A Chat Completions server behind the provider interface (`openai-compatible:MODEL`)."""

    errors = SdkErrors.of(openai, openai.OpenAIError)
    provider_name = WIRES["openai"].name

    def _connect(self, *, api_key: str, base_url: str | None, timeout: float) -> None:
        self._client = openai.OpenAI(
            api_key=api_key, base_url=base_url, timeout=timeout, max_retries=0
        )

    def _body(self, request: ModelRequest) -> ChatArguments:
        params = ModelParams.of(request.params)
        # The tools' wire form is the definitions' own (what `tools --format openai` prints).
        tools = [cast(ChatCompletionToolUnionParam, openai_tool(tool)) for tool in request.tools]
        return ChatArguments(
            model=self.model,
            messages=to_wire_messages(request.messages),
            tools=tools or omit,
            temperature=_given(params.temperature),
            max_tokens=_given(params.max_tokens),
            top_p=_given(params.top_p),
            stop=_given(params.stop),
        )

    def _send_whole(self, body: ChatArguments) -> RawResponse[ChatCompletion]:
        return self._client.chat.completions.with_raw_response.create(**body)

    def _send_stream(self, body: ChatArguments) -> RawResponse[EventStream[ChatCompletionChunk]]:
        return self._client.chat.completions.with_raw_response.create(
            **body, stream=True, stream_options={"include_usage": True}
        )

    def _read_whole(self, completion: ChatCompletion, parts: ResponseParts) -> None:
        completion = model(completion, ChatCompletion, "the response")
        choices = listed(completion.choices, "choices")
        if not choices:
            raise ResponseShapeError("the model server answered with no choices")
        choice = model(choices[0], Choice, "choices[0]")
        message = model(choice.message, ChatCompletionMessage, "choices[0].message")
        parts.add_text(message.content)
        for index, call in enumerate(listed(message.tool_calls, "tool_calls")):
            if isinstance(call, ChatCompletionMessageFunctionToolCall):  # not a custom tool's
                function = model(call.function, Function, f"tool_calls[{index}].function")
                parts.add_call(index, call.id, function.name, function.arguments)
        parts.usage = usage_of(completion.usage)
        parts.response_id = text(completion.id, "id") or None
        parts.finish, parts.ended = text(choice.finish_reason, "finish_reason") or None, True

    def _read_event(self, chunk: ChatCompletionChunk, parts: ResponseParts) -> None:
        chunk = model(chunk, ChatCompletionChunk, "a stream event")
        parts.response_id = parts.response_id or text(chunk.id, "id") or None
        if chunk.usage is not None:
            parts.usage = usage_of(chunk.usage)
        for entry in listed(chunk.choices, "choices"):
            choice = model(entry, ChunkChoice, "a stream event's choice")
            if choice.index != 0:
                continue
            delta = model(choice.delta, ChoiceDelta, "delta")
            parts.add_text(delta.content)
            for piece in listed(delta.tool_calls, "delta.tool_calls"):
                fragment = model(piece, ChoiceDeltaToolCall, "a tool call fragment")
                call_id = text(fragment.id, "a tool call's id")
                call = parts.call(_slot(parts, fragment.index, call_id))
                call["id"] = call["id"] or call_id
                if fragment.function is not None:
                    function = model(fragment.function, ChoiceDeltaToolCallFunction, "function")
                    # The name comes whole, once; a server repeating it is not doubled.
                    call["name"] = call["name"] or text(function.name, "a tool call's name")
                    call["arguments"] += text(function.arguments, "a tool call's arguments")
            if choice.finish_reason is not None:
                # A stream is whole once the server gave its finish reason.
                parts.finish, parts.ended = text(choice.finish_reason, "finish_reason"), True

    def _finish_reason(self, parts: ResponseParts) -> str:
        return finish_reason(parts.finish, bool(parts.calls))
