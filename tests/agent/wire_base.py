"""The common part of the loopback wire servers: scripted replies, recording, the HTTP
server and its handler. The formats are in wire_openai.py and wire_anthropic.py; tests
import everything from wire_servers.py."""

from __future__ import annotations

import contextlib
import json
import socket
import threading
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self
from urllib.parse import urlsplit

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
    response_id: str | None = None  # default: the format's own, numbered by request


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
    """A body sent as is (a proxy's error page, a body of the wrong shape); with `cut`,
    only its first half before the connection drops."""

    body: bytes
    content_type: str = "text/html"
    status: int = 200
    cut: bool = False


Reply = Turn | Failure | Stall | Raw


class ScriptError(Exception):
    """A scripted reply this wire format cannot express; answered 400 with the reason."""


@attrs.frozen
class RecordedRequest:
    path: str
    headers: dict[str, str]
    body: JsonDict


def pieces(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or []


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out in separate writes
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
        # A client sent here as to a proxy names the whole URL (`http://host/v1/...`).
        if urlsplit(self.path).path != wire.path:
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
            if reply.cut:
                self.wfile.write(reply.body[: len(reply.body) // 2])
                self._cut()
            else:
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

    def do_CONNECT(self) -> None:
        """A client that tunnels through a proxy asks for one: recorded, and refused (the
        server speaks no TLS)."""
        headers = {k.lower(): v for k, v in self.headers.items()}
        self.server.wire.requests.append(RecordedRequest(self.path, headers, {}))
        self.close_connection = True
        self._json(502, {"error": {"message": "loopback server: no tunnels"}})

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

    def __enter__(self) -> Self:
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
