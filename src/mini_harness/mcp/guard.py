"""The stdio wire in front of the MCP SDK's server: lines in, answers out.

The SDK parses each input line itself and silently drops what it cannot parse or route: a
request with an id it cannot use, `params` that are not an object, a version other than
"2.0", a value it cannot read (a lone surrogate, a 10,000-digit integer, deep nesting), a
line over the length limit. A client waiting for the answer would wait forever. The guard
here reads each line first; what the SDK can serve goes through unchanged, everything else
with a usable id is answered here: a JSON-RPC error, or for a `tools/call` an ordinary
call through the same runtime (recorded, and an isError result when the input is bad).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import orjson

from mini_harness.errors import GuardError
from mini_harness.events import MAX_JSON_DEPTH, JsonObject, JsonValue
from mini_harness.events.jsonvalue import nested_deeper_than

MAX_LINE_BYTES = 64 * 1024 * 1024
"""The longest input line read: a tool call may carry a whole file, so far more than
asyncio's default 64 KiB. A longer line is answered with an error (-32600) and skipped."""

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603

# Methods this server serves that need the initialize handshake first.
_SERVED = frozenset({"tools/list", "tools/call"})
_MODERN_KEY = "io.modelcontextprotocol/protocolVersion"
# A tools/call nests the arguments three levels down (message, params, arguments).
_ENVELOPE_DEPTH = 3
_CHUNK = 1 << 16
_LEADING_ID = re.compile(
    rb'^\s*\{\s*(?:"jsonrpc"\s*:\s*"[^"]*"\s*,\s*)?"id"\s*:\s*(-?\d{1,18}|"(?:[^"\\]|\\.){0,256}")'
)


class IntegerTooLong:
    """An integer with more digits than Python reads (4,300): not a value a tool can get."""

    def __init__(self, digits: str) -> None:
        self.digits = len(digits.lstrip("-"))

    def __repr__(self) -> str:
        return f"<integer of {self.digits} digits>"


def _parse_int(text: str) -> int | IntegerTooLong:
    try:
        return int(text)
    except ValueError:
        return IntegerTooLong(text)


def _refuse_constant(name: str) -> None:
    raise ValueError(f"{name} is not JSON")


def read_message(text: str) -> tuple[bool, Any]:
    """(True, value) for a JSON line orjson reads, as the SDK will; (False, value) for
    JSON it does not (lone surrogates, huge integers), read by the json module instead.
    Raises ValueError for a line that is not JSON (or nests too deeply to read)."""
    try:
        return True, orjson.loads(text)
    except orjson.JSONDecodeError:
        pass
    try:
        return False, json.loads(text, parse_int=_parse_int, parse_constant=_refuse_constant)
    except RecursionError:
        raise ValueError("nested too deeply to read") from None


def error_response(request_id: JsonValue, code: int, message: str) -> bytes:
    return orjson.dumps(
        {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}
    )


class Wire:
    """The client's end of standard output: whole lines, one writer at a time.

    Both the SDK's writer and the guard write here, straight from the event loop: the
    descriptor is non-blocking, and when the client reads slowly a writer waits for the
    pipe to take more, holding the lock so lines never interleave.
    """

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._lock = asyncio.Lock()
        os.set_blocking(fd, False)

    async def write(self, text: str) -> int:
        await self.send(text.encode("utf-8", errors="replace"))
        return len(text)

    async def flush(self) -> None:
        return None

    async def send(self, data: bytes) -> None:
        async with self._lock:
            view = memoryview(data)
            while view:
                try:
                    view = view[os.write(self._fd, view) :]
                except BlockingIOError:
                    await _ready(self._fd, write=True)


CallTool = Callable[[str, JsonValue], Awaitable[JsonObject]]


class GuardedLines:
    """The input lines the SDK can serve; the guard answers the rest itself."""

    def __init__(self, fd: int, wire: Wire, call_tool: CallTool) -> None:
        self._fd = fd
        self._wire = wire
        self._call_tool = call_tool
        self._initialised = False
        self._calls: set[asyncio.Task[None]] = set()
        self._unsent: OSError | None = None  # an answer of ours the client did not take

    async def __aiter__(self) -> AsyncIterator[str]:
        try:
            async for raw in _lines(self._fd):
                if self._unsent is not None:  # the session ends as the SDK's writes end it
                    raise self._unsent
                if isinstance(raw, Overlong):
                    await self._overlong(raw)
                    continue
                line = raw.decode("utf-8", errors="replace")
                if line.strip() and await self._screen(line):
                    yield line
        finally:
            for task in self._calls:
                task.cancel()
            if self._calls:
                await asyncio.gather(*self._calls, return_exceptions=True)

    async def _overlong(self, line: Overlong) -> None:
        _warn(f"skipped an input line longer than {MAX_LINE_BYTES} bytes")
        await self._reply(
            _leading_id(line.head),
            INVALID_REQUEST,
            f"Invalid Request: line longer than the limit of {MAX_LINE_BYTES} bytes",
        )

    async def _reply(self, request_id: JsonValue, code: int, message: str) -> None:
        await self._wire.send(error_response(request_id, code, message) + b"\n")

    async def _screen(self, line: str) -> bool:
        """True to hand `line` to the SDK; otherwise it is answered (or dropped) here."""
        try:
            readable, message = read_message(line)
        except ValueError as exc:
            await self._reply(None, PARSE_ERROR, f"Parse error: {exc}")
            return False
        if not isinstance(message, dict):
            await self._reply(None, INVALID_REQUEST, "Invalid Request: not a JSON object")
            return False
        if "method" not in message:
            return "result" in message or "error" in message  # a client's answer
        if "id" not in message:
            return readable  # a notification is never answered
        request_id = message["id"]
        if isinstance(request_id, bool) or not isinstance(request_id, int | str):
            await self._reply(
                None, INVALID_REQUEST, "Invalid Request: id must be a string or an integer"
            )
            return False
        problem = _envelope_problem(message)
        if problem is not None:
            await self._reply(request_id, *problem)
            return False
        method, params = message["method"], message.get("params")
        if method in _SERVED and not self._initialised and not _modern(params):
            await self._reply(
                request_id,
                INVALID_REQUEST,
                f"Invalid Request: the session is not initialised: send initialize before {method}",
            )
            return False
        if readable and not nested_deeper_than(line, MAX_JSON_DEPTH + _ENVELOPE_DEPTH):
            self._initialised = self._initialised or method == "initialize"
            return True
        if (
            method == "tools/call"
            and isinstance(params, dict)
            and isinstance(params.get("name"), str)
        ):
            task = asyncio.create_task(self._call(request_id, params))
            self._calls.add(task)
            task.add_done_callback(self._calls.discard)
            return False
        await self._reply(request_id, INVALID_PARAMS, "Invalid params: a value cannot be read")
        return False

    async def _call(self, request_id: int | str, params: JsonObject) -> None:
        arguments = params.get("arguments")
        try:
            result = await self._call_tool(params["name"], {} if arguments is None else arguments)
            answer = orjson.dumps({"jsonrpc": "2.0", "id": request_id, "result": result})
        except GuardError as exc:
            answer = error_response(request_id, exc.code, exc.message)
        except (TypeError, orjson.JSONEncodeError):
            answer = error_response(request_id, INTERNAL_ERROR, "the result cannot be encoded")
        try:
            await self._wire.send(answer + b"\n")
        except OSError as exc:  # no one awaits this task: the line loop raises it
            self._unsent = exc


def _envelope_problem(message: JsonObject) -> tuple[int, str] | None:
    if message.get("jsonrpc") != "2.0":
        return INVALID_REQUEST, 'Invalid Request: "jsonrpc" must be "2.0"'
    if not isinstance(message["method"], str):
        return INVALID_REQUEST, "Invalid Request: method must be a string"
    if "params" in message and not isinstance(message["params"], dict):
        return INVALID_PARAMS, "Invalid params: params must be an object"
    return None


def _modern(params: Any) -> bool:
    meta = params.get("_meta") if isinstance(params, dict) else None
    return isinstance(meta, dict) and _MODERN_KEY in meta


def _leading_id(raw: bytes) -> JsonValue:
    """The id of a request that cannot be read whole, when it opens the line."""
    match = _LEADING_ID.match(raw[:4096])
    if match is None:
        return None
    try:
        return orjson.loads(match.group(1))
    except orjson.JSONDecodeError:
        return None


class Overlong:
    """A line over MAX_LINE_BYTES, skipped: only its start is kept (for its id)."""

    def __init__(self, head: bytes) -> None:
        self.head = head


async def _lines(fd: int) -> AsyncIterator[bytes | Overlong]:
    """Input lines without their newline; an Overlong for a line over MAX_LINE_BYTES."""
    pending = bytearray()
    overlong: Overlong | None = None
    async for chunk in _chunks(fd):
        start = 0
        while (end := chunk.find(b"\n", start)) != -1:
            if overlong is None and len(pending) + end - start > MAX_LINE_BYTES:
                overlong = Overlong(bytes((pending + chunk[start : start + 4096])[:4096]))
            if overlong is not None:
                yield overlong
                overlong = None
            else:
                pending += chunk[start:end]
                yield bytes(pending)
            pending.clear()
            start = end + 1
        if overlong is None:
            pending += chunk[start:]
            if len(pending) > MAX_LINE_BYTES:
                overlong = Overlong(bytes(pending[:4096]))
                pending.clear()
    if overlong is not None:
        yield overlong
    elif pending:
        yield bytes(pending)


async def _chunks(fd: int) -> AsyncIterator[bytes]:
    """What arrives on `fd`, read from the event loop without a thread, so cancelling is
    instant. A regular file or /dev/null never makes a read wait."""
    os.set_blocking(fd, False)
    while True:
        try:
            chunk = os.read(fd, _CHUNK)
        except BlockingIOError:
            await _ready(fd, write=False)
            continue
        if not chunk:
            return
        yield chunk


async def _ready(fd: int, *, write: bool) -> None:
    """Wait until `fd` (a pipe, socket or terminal) can be written, or read, at once."""
    loop = asyncio.get_running_loop()
    ready: asyncio.Future[None] = loop.create_future()

    def wake() -> None:
        if not ready.done():  # the callback runs until removed
            ready.set_result(None)

    watch, unwatch = (
        (loop.add_writer, loop.remove_writer) if write else (loop.add_reader, loop.remove_reader)
    )
    watch(fd, wake)
    try:
        await ready
    finally:
        unwatch(fd)


def _warn(message: str) -> None:
    # stdout belongs to the protocol: diagnostics only ever go to stderr.
    os.write(2, f"[mini-harness] Warning: {message}\n".encode())
