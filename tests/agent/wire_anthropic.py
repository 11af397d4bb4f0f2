"""Anthropic Messages on the loopback server: rendering turns, and the message rules."""

from __future__ import annotations

import json

from tests.agent.wire_base import JsonDict, ScriptError, Turn, WireServer, pieces


class AnthropicWireServer(WireServer):
    """Anthropic Messages (`POST /v1/messages`)."""

    path = "/v1/messages"
    prefix = ""

    def presented_key(self, headers: dict[str, str]) -> str:
        # The API takes the key as x-api-key or as a bearer token (the SDK's choice).
        return headers.get("x-api-key") or headers.get("authorization", "").removeprefix("Bearer ")

    def error_body(self, status: int, message: str) -> JsonDict:
        kind = {
            400: "invalid_request_error",
            401: "authentication_error",
            429: "rate_limit_error",
            529: "overloaded_error",
        }.get(status, "api_error")
        return {"type": "error", "error": {"type": kind, "message": message}}

    def validate(self, body: JsonDict) -> str | None:
        if not isinstance(body.get("model"), str):
            return "model: Field required"
        max_tokens = body.get("max_tokens")
        if not isinstance(max_tokens, int) or max_tokens < 1:
            return "max_tokens: Field required (a positive integer)"
        if "system" in body and not isinstance(body["system"], str | list):
            return "system: must be a string or a list of text blocks"
        for n, tool in enumerate(body.get("tools") or []):
            if not isinstance(tool.get("name"), str) or not isinstance(
                tool.get("input_schema"), dict
            ):
                return f"tools.{n}: name and input_schema are required"
        return validate_anthropic_messages(body.get("messages"))

    def turn_json(self, turn: Turn, request: JsonDict) -> JsonDict:
        content: list[JsonDict] = []
        if turn.text:
            content.append({"type": "text", "text": turn.text})
        for call_id, name, arguments in turn.tool_calls:
            try:
                value = json.loads(arguments)
            except ValueError:
                value = None
            if not isinstance(value, dict):
                raise ScriptError(
                    "a whole Messages response carries tool input as a JSON object; "
                    "only a streamed turn can send malformed input"
                )
            content.append({"type": "tool_use", "id": call_id, "name": name, "input": value})
        return {
            "id": turn.response_id or f"msg_{len(self.requests)}",
            "type": "message",
            "role": "assistant",
            "model": request["model"],
            "content": content,
            "stop_reason": self._stop(turn),
            "stop_sequence": None,
            "usage": self._usage(turn),
        }

    def events(self, turn: Turn, request: JsonDict) -> list[bytes]:
        def event(name: str, data: JsonDict) -> bytes:
            return f"event: {name}\ndata: {json.dumps({'type': name, **data})}\n\n".encode()

        opening = Turn(input_tokens=turn.input_tokens, response_id=turn.response_id)
        start = self.turn_json(opening, request)
        start.update(content=[], stop_reason=None, usage={**self._usage(turn), "output_tokens": 1})
        out = [event("message_start", {"message": start}), event("ping", {})]
        # Each block: how it starts, its delta type and field, and the text streamed in it.
        blocks: list[tuple[JsonDict, str, str, str]] = []
        if turn.text:
            blocks.append(({"type": "text", "text": ""}, "text_delta", "text", turn.text))
        for call_id, name, arguments in turn.tool_calls:
            tool_use = {"type": "tool_use", "id": call_id, "name": name, "input": {}}
            blocks.append((tool_use, "input_json_delta", "partial_json", arguments))
        for index, (block, delta_type, field, text) in enumerate(blocks):
            out.append(event("content_block_start", {"index": index, "content_block": block}))
            out += [
                event(
                    "content_block_delta",
                    {"index": index, "delta": {"type": delta_type, field: piece}},
                )
                for piece in pieces(text, turn.piece)
            ]
            out.append(event("content_block_stop", {"index": index}))
        out.append(
            event(
                "message_delta",
                {
                    "delta": {"stop_reason": self._stop(turn), "stop_sequence": None},
                    "usage": {"output_tokens": turn.output_tokens},
                },
            )
        )
        out.append(event("message_stop", {}))
        return out

    def _stop(self, turn: Turn) -> str:
        return turn.finish or ("tool_use" if turn.tool_calls else "end_turn")

    def _usage(self, turn: Turn) -> JsonDict:
        usage: JsonDict = {
            "input_tokens": turn.input_tokens,
            "output_tokens": turn.output_tokens,
        }
        if turn.cached_tokens is not None:
            usage["cache_read_input_tokens"] = turn.cached_tokens
        return usage


def _blocks(content: object) -> list[JsonDict] | None:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if isinstance(content, list) and all(isinstance(b, dict) for b in content):
        return content
    return None


def validate_anthropic_messages(messages: object) -> str | None:
    """The first way `messages` breaks the Messages API's rules, or None when it is valid."""
    if not isinstance(messages, list) or not messages:
        return "messages: at least one message is required"
    expected: list[str] = []  # tool_use ids of the previous assistant turn
    used: set[str] = set()  # every tool_use id so far: the API wants them unique
    for n, message in enumerate(messages):
        role = message.get("role") if isinstance(message, dict) else None
        if role not in ("user", "assistant"):
            return f"messages.{n}.role: Input should be 'user' or 'assistant'"
        if n == 0 and role != "user":
            return "messages.0: the first message must use the user role"
        if n > 0 and role == messages[n - 1].get("role"):
            return f"messages.{n}: roles must alternate between user and assistant"
        blocks = _blocks(message.get("content"))
        if blocks is None:
            return f"messages.{n}.content: must be a string or a list of blocks"
        if not blocks:
            return f"messages.{n}: all messages must have non-empty content"
        for k, block in enumerate(blocks):
            if block.get("type") == "text" and not block.get("text"):
                return f"messages.{n}.content.{k}: text content blocks must be non-empty"
        if role == "user":
            results = [b for b in blocks if b.get("type") == "tool_result"]
            ids = [b.get("tool_use_id") for b in results]
            if expected and sorted(map(str, ids)) != sorted(expected):
                return (
                    f"messages.{n}: tool_use ids were found without tool_result blocks "
                    f"immediately after: {', '.join(sorted(set(expected) - set(map(str, ids))))}"
                    if set(expected) - set(map(str, ids))
                    else f"messages.{n}: unexpected or repeated tool_use_id in tool_result blocks"
                )
            if results and not expected:
                return (
                    f"messages.{n}: tool_result block(s) without a tool_use in the previous message"
                )
            if any(b.get("type") != "tool_result" for b in blocks[: len(results)]):
                return f"messages.{n}: tool_result blocks must come first in the content"
            for b in results:
                if "is_error" in b and not isinstance(b["is_error"], bool):
                    return f"messages.{n}: tool_result.is_error must be a boolean"
            expected = []
            continue
        expected = []
        for k, block in enumerate(blocks):
            if block.get("type") == "tool_use":
                if not isinstance(block.get("id"), str) or not isinstance(block.get("name"), str):
                    return f"messages.{n}.content.{k}: tool_use needs an id and a name"
                if not isinstance(block.get("input"), dict):
                    return f"messages.{n}.content.{k}.input: Input should be an object"
                if block["id"] in expected:
                    return f"messages.{n}.content.{k}: duplicate tool_use id {block['id']!r}"
                if block["id"] in used:
                    return f"messages.{n}.content.{k}: `tool_use` ids must be unique"
                expected.append(block["id"])
                used.add(block["id"])
    if expected:
        return "tool_use ids were found without tool_result blocks immediately after: " + ", ".join(
            sorted(expected)
        )
    return None
