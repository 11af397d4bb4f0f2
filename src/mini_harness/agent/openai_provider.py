"""OpenAI-compatible Chat Completions with tool calling, through the official `openai` SDK.

Imported only when this provider is chosen (the SDK is the optional `openai` extra).
Works with OpenAI, DeepSeek, vLLM, Ollama and llama.cpp servers: anything that speaks
`POST <base>/chat/completions`. Streams with `stream_options.include_usage` so streamed
responses report usage too.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import openai

from mini_harness.agent.provider import FINISH_REASONS, Message, ModelRequest, ModelResponse, Usage
from mini_harness.agent.sdk_provider import (
    ResponseParts,
    SdkProvider,
    arguments_text,
    checked_text,
    invalid_response,
    wire_params,
)
from mini_harness.runtime.definitions import ToolDefinition

if TYPE_CHECKING:
    from openai.types.chat import ChatCompletion, ChatCompletionChunk
    from openai.types.completion_usage import CompletionUsage

# Neutral parameter names (camelCase, as recorded) and their Chat Completions names.
_PARAMS = {"temperature": "temperature", "maxTokens": "max_tokens", "topP": "top_p", "stop": "stop"}


def to_wire_messages(messages: tuple[Message, ...]) -> list[dict[str, Any]]:
    """The neutral conversation as Chat Completions messages."""
    out: list[dict[str, Any]] = []
    for message in messages:
        if message.role == "assistant":
            entry: dict[str, Any] = {"role": "assistant", "content": message.content}
            if message.tool_calls:
                entry["content"] = message.content or None
                entry["tool_calls"] = [
                    {
                        "id": call.id,
                        "type": "function",
                        "function": {
                            "name": call.name,
                            "arguments": arguments_text(call.arguments),
                        },
                    }
                    for call in message.tool_calls
                ]
            out.append(entry)
        elif message.role == "tool":
            out.append(
                {"role": "tool", "tool_call_id": message.tool_call_id, "content": message.content}
            )
        else:
            out.append({"role": message.role, "content": message.content})
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


class OpenAICompatibleProvider(SdkProvider):
    """A Chat Completions server behind the provider interface (`openai-compatible:MODEL`)."""

    sdk_error = openai.OpenAIError
    stream_arguments = {"stream": True, "stream_options": {"include_usage": True}}  # noqa: RUF012
    provider_name = "openai-compatible"

    def _connect(self, **settings: Any) -> Callable[..., Any]:
        return openai.OpenAI(**settings).chat.completions.create

    def _arguments(self, request: ModelRequest) -> dict[str, Any]:
        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": to_wire_messages(request.messages),
            **wire_params(request.params, _PARAMS),
        }
        if request.tools:
            kwargs["tools"] = [ToolDefinition.from_json(tool).to_openai() for tool in request.tools]
        return kwargs

    def _read(self, completion: ChatCompletion, parts: ResponseParts) -> ModelResponse:
        if not completion.choices:
            raise invalid_response("The model server answered with no choices")
        choice = completion.choices[0]
        parts.add_text(choice.message.content)
        for index, call in enumerate(choice.message.tool_calls or ()):
            if call.type == "function":
                parts.add_call(index, call.id, call.function.name, call.function.arguments)
        parts.usage, parts.response_id = usage_of(completion.usage), completion.id or None
        return parts.response(finish_reason(choice.finish_reason, bool(parts.calls)))

    def _read_stream(self, stream: Any, parts: ResponseParts) -> ModelResponse:
        wire_finish: str | None = None
        chunk: ChatCompletionChunk
        for chunk in stream:
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
                    wire_finish = choice.finish_reason
        if wire_finish is None:
            return parts.response(None)
        return parts.response(finish_reason(wire_finish, bool(parts.calls)))
