"""Loopback HTTP servers that speak the two model wire formats, for tests.

`OpenAIWireServer` answers `POST /v1/chat/completions`, `AnthropicWireServer` answers
`POST /v1/messages`, both on 127.0.0.1. A test scripts the replies in order:

- `Turn(text=..., tool_calls=(("call_1", "read_file", '{"path": "a"}'),), ...)`: a model
  turn, sent as one JSON body or as an SSE stream, whichever the request asked for (so one
  script serves streaming and non-streaming clients alike); `cut_after=N` closes the
  connection after N stream events (or half the JSON body), mid-response;
- `Failure(status, message, retry_after="0")`: an error status in the format's error body;
- `Stall(seconds)`: answers nothing for that long, then closes the connection;
- `Raw(body, content_type)`: a body sent as is (a proxy's page, a body of the wrong shape).

Every request is recorded (`requests`), and its history is VALIDATED against the
provider's message rules first: an invalid history is answered 400 with the reason (and
kept in `rejections`) without using a scripted reply. The rules checked are the ones real
servers enforce: every assistant tool call answered by exactly one tool result with its
id before the next turn, tool results only for the previous assistant's calls, tool-call
arguments that parse as a JSON object (OpenAI-compatible servers such as vLLM refuse
others), Anthropic's alternating roles with `tool_result` blocks first.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import attrs

JsonDict = dict[str, Any]


@attrs.frozen
class Turn:
    """A scripted model turn; `finish` is the wire's own finish/stop reason (default:
    the tool-call reason when there are tool calls, else the normal end)."""

    text: str = ""
    tool_calls: tuple[tuple[str, str, str], ...] = ()  # (id, name, raw arguments)
    finish: str | None = None
    input_tokens: int = 11
    output_tokens: int = 7
    cached_tokens: int | None = None
    piece: int = 4  # characters per streamed text or argument fragment
    cut_after: int | None = None


@attrs.frozen
class Failure:
    """An HTTP error status with the format's error body and a Retry-After header."""

    status: int
    message: str
    retry_after: str | None = "0.01"  # the SDKs honour it; 0 would mean their own backoff


@attrs.frozen
class Stall:
    """No answer for `seconds`, then the connection is closed."""

    seconds: float


@attrs.frozen
class Raw:
    """A body sent as is (a proxy's error page, a body of the wrong shape)."""

    body: bytes
    content_type: str = "text/html"
    status: int = 200


Reply = Turn | Failure | Stall | Raw


class ScriptError(Exception):
    """A scripted reply this wire format cannot express; answered 400 with the reason."""


@attrs.frozen
class RecordedRequest:
    path: str
    headers: dict[str, str]
    body: JsonDict


def _pieces(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or []


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: tests read `requests`, not a log."""

    def do_POST(self) -> None:
        wire = self.server.wire
        length = int(self.headers.get("content-length", "0"))
        raw = self.rfile.read(length)
        try:
            body = json.loads(raw)
        except ValueError:
            self._json(400, wire.error_body(400, "the request body is not JSON"))
            return
        headers = {k.lower(): v for k, v in self.headers.items()}
        wire.requests.append(RecordedRequest(self.path, headers, body))
        if self.path.split("?")[0] != wire.path:
            self._json(404, wire.error_body(404, f"no route for {self.path}"))
            return
        if wire.api_key is not None and wire.presented_key(headers) != wire.api_key:
            presented = wire.presented_key(headers)
            # Worse than real servers: the whole key presented is echoed back.
            self._json(401, wire.error_body(401, f"Incorrect API key provided: {presented}"))
            return
        problem = wire.validate(body)
        if problem is not None:
            wire.rejections.append(problem)
            self._json(400, wire.error_body(400, problem))
            return
        reply = wire.next_reply()
        if reply is None:
            self._json(400, wire.error_body(400, "loopback server: no scripted reply left"))
        elif isinstance(reply, Failure):
            headers_out = {"retry-after": reply.retry_after} if reply.retry_after else {}
            self._json(reply.status, wire.error_body(reply.status, reply.message), headers_out)
        elif isinstance(reply, Raw):
            self.send_response(reply.status)
            self.send_header("content-type", reply.content_type)
            self.send_header("content-length", str(len(reply.body)))
            self.end_headers()
            self.wfile.write(reply.body)
        elif isinstance(reply, Stall):
            wire.stopping.wait(reply.seconds)
            self._cut()
        else:
            try:
                if body.get("stream"):
                    events = wire.events(reply, body)
                else:
                    whole = wire.turn_json(reply, body)
            except ScriptError as error:
                self._json(400, wire.error_body(400, f"loopback server script error: {error}"))
                return
            if body.get("stream"):
                self._stream(events, reply.cut_after)
            else:
                self._turn_json(whole, reply.cut_after)

    def _json(self, status: int, body: JsonDict, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _turn_json(self, body: JsonDict, cut: int | None) -> None:
        if cut is None:
            self._json(200, body)
            return
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data[: len(data) // 2])
        self._cut()

    def _stream(self, events: list[bytes], cut: int | None) -> None:
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        for number, event in enumerate(events):
            if cut is not None and number >= cut:
                self._cut()
                return
            self.wfile.write(b"%x\r\n%s\r\n" % (len(event), event))
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")

    def _cut(self) -> None:
        """Drop the connection where it stands (no terminating chunk, no more bytes)."""
        self.close_connection = True
        self.wfile.flush()
        with contextlib.suppress(OSError):
            self.connection.shutdown(socket.SHUT_RDWR)


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, wire: WireServer) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.wire = wire

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that went away mid-reply (a timeout test) is not an error here."""


class WireServer:
    """The common part: scripting, recording, the HTTP server's lifetime."""

    path = ""
    prefix = ""  # what the SDK's base URL ends with

    def __init__(self, *, api_key: str | None = None) -> None:
        self.api_key = api_key
        self.requests: list[RecordedRequest] = []
        self.rejections: list[str] = []
        self.stopping = threading.Event()
        self._replies: deque[Reply] = deque()
        self._lock = threading.Lock()
        self._server = _Server(self)
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}{self.prefix}"

    def script(self, *replies: Reply) -> None:
        """Queue replies, answered in order, one per valid request."""
        with self._lock:
            self._replies.extend(replies)

    @property
    def unused(self) -> int:
        """How many scripted replies were never sent."""
        return len(self._replies)

    def next_reply(self) -> Reply | None:
        with self._lock:
            return self._replies.popleft() if self._replies else None

    def __enter__(self) -> WireServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stopping.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    # Each wire format fills these in.
    def presented_key(self, headers: dict[str, str]) -> str:
        raise NotImplementedError

    def error_body(self, status: int, message: str) -> JsonDict:
        raise NotImplementedError

    def validate(self, body: JsonDict) -> str | None:
        raise NotImplementedError

    def turn_json(self, turn: Turn, request: JsonDict) -> JsonDict:
        raise NotImplementedError

    def events(self, turn: Turn, request: JsonDict) -> list[bytes]:
        raise NotImplementedError


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

    def __enter__(self) -> OpenAIWireServer:
        super().__enter__()
        return self

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
            "id": f"chatcmpl-{len(self.requests)}",
            "object": "chat.completion",
            "created": 1_700_000_000,
            "model": request["model"],
            "choices": [{"index": 0, "message": message, "finish_reason": self._finish(turn)}],
            "usage": self._usage(turn),
        }

    def events(self, turn: Turn, request: JsonDict) -> list[bytes]:
        response_id = f"chatcmpl-{len(self.requests)}"

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
        out += [delta({"content": piece}) for piece in _pieces(turn.text, turn.piece)]
        for index, (call_id, name, arguments) in enumerate(turn.tool_calls):
            first = {"index": index, "id": call_id, "type": "function"}
            out.append(delta({"tool_calls": [{**first, "function": {"name": name}}]}))
            out += [
                delta({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
                for piece in _pieces(arguments, turn.piece)
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


class AnthropicWireServer(WireServer):
    """Anthropic Messages (`POST /v1/messages`)."""

    path = "/v1/messages"
    prefix = ""

    def __enter__(self) -> AnthropicWireServer:
        super().__enter__()
        return self

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
            "id": f"msg_{len(self.requests)}",
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

        start = self.turn_json(Turn(input_tokens=turn.input_tokens), request)
        start.update(content=[], stop_reason=None, usage={**self._usage(turn), "output_tokens": 1})
        out = [event("message_start", {"message": start}), event("ping", {})]
        index = 0
        if turn.text:
            out.append(
                event(
                    "content_block_start",
                    {"index": index, "content_block": {"type": "text", "text": ""}},
                )
            )
            out += [
                event(
                    "content_block_delta",
                    {"index": index, "delta": {"type": "text_delta", "text": piece}},
                )
                for piece in _pieces(turn.text, turn.piece)
            ]
            out.append(event("content_block_stop", {"index": index}))
            index += 1
        for call_id, name, arguments in turn.tool_calls:
            out.append(
                event(
                    "content_block_start",
                    {
                        "index": index,
                        "content_block": {
                            "type": "tool_use",
                            "id": call_id,
                            "name": name,
                            "input": {},
                        },
                    },
                )
            )
            out += [
                event(
                    "content_block_delta",
                    {"index": index, "delta": {"type": "input_json_delta", "partial_json": piece}},
                )
                for piece in _pieces(arguments, turn.piece)
            ]
            out.append(event("content_block_stop", {"index": index}))
            index += 1
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
                expected.append(block["id"])
    if expected:
        return "tool_use ids were found without tool_result blocks immediately after: " + ", ".join(
            sorted(expected)
        )
    return None
