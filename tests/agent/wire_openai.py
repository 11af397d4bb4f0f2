"""Chat Completions on the loopback server: rendering turns, and the message rules."""

from __future__ import annotations

import json
from typing import Any

from tests.agent.wire_base import JsonDict, Turn, WireServer, pieces


def _parses_to_object(text: object) -> bool:
    if not isinstance(text, str):
        return False
    try:
        return isinstance(json.loads(text), dict)
    except ValueError:
        return False


class OpenAIWireServer(WireServer):
    """Chat Completions (`POST /v1/chat/completions`), as vLLM or OpenAI answer it."""

    path = "/v1/chat/completions"
    prefix = "/v1"

    def presented_key(self, headers: dict[str, str]) -> str:
        return headers.get("authorization", "").removeprefix("Bearer ")

    def error_body(self, status: int, message: str) -> JsonDict:
        kind = "invalid_request_error" if status < 500 else "server_error"
        return {"error": {"message": message, "type": kind, "param": None, "code": None}}

    def validate(self, body: JsonDict) -> str | None:
        if not isinstance(body.get("model"), str):
            return "model is required"
        if "stream_options" in body and not body.get("stream"):
            return "stream_options is only allowed when stream is true"
        for n, tool in enumerate(body.get("tools") or []):
            function = tool.get("function") if isinstance(tool, dict) else None
            if tool.get("type") != "function" or not isinstance(function, dict):
                return f"tools[{n}] must be a function tool"
            if not isinstance(function.get("name"), str):
                return f"tools[{n}].function.name is required"
        return validate_openai_messages(body.get("messages"))

    def turn_json(self, turn: Turn, request: JsonDict) -> JsonDict:
        message: JsonDict = {"role": "assistant", "content": turn.text or None}
        if turn.tool_calls:
            message["tool_calls"] = [
                {"id": i, "type": "function", "function": {"name": n, "arguments": a}}
                for i, n, a in turn.tool_calls
            ]
        return {
            "id": turn.response_id or f"chatcmpl-{len(self.requests)}",
            "object": "chat.completion",
            "created": 1_700_000_000,
            "model": request["model"],
            "choices": [{"index": 0, "message": message, "finish_reason": self._finish(turn)}],
            "usage": self._usage(turn),
        }

    def events(self, turn: Turn, request: JsonDict) -> list[bytes]:
        response_id = turn.response_id or f"chatcmpl-{len(self.requests)}"

        def chunk(choices: list[JsonDict], **extra: Any) -> bytes:
            data = {
                "id": response_id,
                "object": "chat.completion.chunk",
                "created": 1_700_000_000,
                "model": request["model"],
                "choices": choices,
                **extra,
            }
            return b"data: " + json.dumps(data).encode() + b"\n\n"

        def delta(content: JsonDict, finish: str | None = None) -> bytes:
            return chunk([{"index": 0, "delta": content, "finish_reason": finish}])

        out = [delta({"role": "assistant", "content": ""})]
        out += [delta({"content": piece}) for piece in pieces(turn.text, turn.piece)]
        for index, (call_id, name, arguments) in enumerate(turn.tool_calls):
            first = {"index": index, "id": call_id, "type": "function"}
            out.append(delta({"tool_calls": [{**first, "function": {"name": name}}]}))
            out += [
                delta({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
                for piece in pieces(arguments, turn.piece)
            ]
        out.append(delta({}, self._finish(turn)))
        if (request.get("stream_options") or {}).get("include_usage"):
            out.append(chunk([], usage=self._usage(turn)))
        out.append(b"data: [DONE]\n\n")
        return out

    def _finish(self, turn: Turn) -> str:
        return turn.finish or ("tool_calls" if turn.tool_calls else "stop")

    def _usage(self, turn: Turn) -> JsonDict:
        usage: JsonDict = {
            "prompt_tokens": turn.input_tokens,
            "completion_tokens": turn.output_tokens,
            "total_tokens": turn.input_tokens + turn.output_tokens,
        }
        if turn.cached_tokens is not None:
            usage["prompt_tokens_details"] = {"cached_tokens": turn.cached_tokens}
        return usage


def validate_openai_messages(messages: object) -> str | None:
    """The first way `messages` breaks Chat Completions' rules, or None when it is valid."""
    if not isinstance(messages, list) or not messages:
        return "messages must be a non-empty list"
    pending: set[str] = set()  # tool calls of the last assistant message still unanswered
    answering = False  # inside the tool messages that follow an assistant's tool calls
    for n, message in enumerate(messages):
        role = message.get("role") if isinstance(message, dict) else None
        if role not in ("system", "developer", "user", "assistant", "tool"):
            return f"messages[{n}]: unknown role {role!r}"
        if role == "tool":
            call_id = message.get("tool_call_id")
            if not answering:
                return f"messages[{n}]: a tool message must follow an assistant's tool_calls"
            if call_id not in pending:
                return (
                    f"messages[{n}]: tool_call_id {call_id!r} does not answer an unanswered "
                    "tool call of the preceding assistant message"
                )
            pending.discard(call_id)
            if not isinstance(message.get("content"), str | list):
                return f"messages[{n}]: a tool message needs content"
            continue
        if pending:
            return (
                f"messages[{n}]: the assistant's tool call(s) {', '.join(sorted(pending))} "
                f"have no tool message before this {role} message"
            )
        answering = False
        if role != "assistant":
            if not isinstance(message.get("content"), str | list):
                return f"messages[{n}]: a {role} message needs content"
            continue
        calls = message.get("tool_calls") or []
        if not calls and message.get("content") is None:
            return f"messages[{n}]: an assistant message needs content or tool_calls"
        for k, call in enumerate(calls):
            function = call.get("function") or {}
            if not isinstance(call.get("id"), str) or not call["id"]:
                return f"messages[{n}].tool_calls[{k}]: id is required"
            if call["id"] in pending:
                return f"messages[{n}].tool_calls[{k}]: duplicate id {call['id']!r}"
            if not isinstance(function.get("name"), str):
                return f"messages[{n}].tool_calls[{k}].function.name is required"
            if not _parses_to_object(function.get("arguments")):
                return f"messages[{n}].tool_calls[{k}].function.arguments is not a JSON object"
            pending.add(call["id"])
        answering = bool(calls)
    if pending:
        return f"the assistant's tool call(s) {', '.join(sorted(pending))} have no tool message"
    return None
