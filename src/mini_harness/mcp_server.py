"""Serve a tool registry to MCP clients over stdio; every call goes through one ToolRuntime.

One server process serves one MCP session, and one session is one run: `RunStarted` is
recorded when serving begins and every `tools/call` appends `ToolCalled` and a terminal
event through `ToolRuntime.dispatch_async`, exactly as the CLI does.

The `mcp` SDK is an optional extra: only `build_server` and `serve_stdio` import it.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import selectors
import signal
import sys
from collections.abc import AsyncIterator, Iterator
from typing import TYPE_CHECKING, Any, cast

import orjson

from mini_harness._version import __version__
from mini_harness.errors import MiniHarnessError, OutputError, ToolCallError, UnknownToolError
from mini_harness.events import JsonObject, JsonValue
from mini_harness.runtime import ToolRuntime

if TYPE_CHECKING:
    from mcp.server.lowlevel import Server

SERVER_NAME = "mini-harness"

# Requests arrive one JSON-RPC message per line; a tool call may carry a whole file, so a
# line may be far longer than asyncio's default 64 KiB stream limit.
_MAX_LINE = 64 * 1024 * 1024

# --- result shapes (plain JSON, no SDK needed) ----------------------------------------


def render_text(output: JsonValue) -> str:
    """The text rendering of a tool output: compact JSON, whatever the output's type."""
    return orjson.dumps(output).decode()


def success_result(output: JsonValue) -> JsonObject:
    """A `tools/call` result for a successful dispatch.

    `structuredContent` carries the output when it is a JSON object; MCP before
    2026-07-28 allows nothing else there, so other outputs (strings, numbers, arrays,
    null) travel as the text rendering alone rather than wrapped in an invented object.
    """
    result: JsonObject = {"content": [{"type": "text", "text": render_text(output)}]}
    if isinstance(output, dict):
        result["structuredContent"] = output
    return result


def error_result(error: ToolCallError) -> JsonObject:
    """A `tools/call` result for a recorded failure: our message, so the model can react."""
    return {"content": [{"type": "text", "text": error.message}], "isError": True}


def list_tools_result(runtime: ToolRuntime) -> JsonObject:
    """The `tools/list` result: each definition exactly as `ToolDefinition.to_mcp()` gives it."""
    return {"tools": [definition.to_mcp() for definition in runtime.registry.list()]}


# --- the SDK-facing server ------------------------------------------------------------


def build_server(runtime: ToolRuntime) -> Server[Any]:
    """An MCP low-level server answering tools/list and tools/call from `runtime`."""
    from mcp import types
    from mcp.server.context import ServerRequestContext
    from mcp.server.lowlevel import Server
    from mcp.shared.exceptions import MCPError

    # The low-level server does not validate arguments against inputSchema (that is the
    # high-level MCPServer's job), so our validator and its messages are the only ones.
    listing = types.ListToolsResult.model_validate(list_tools_result(runtime))

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return listing

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        arguments: JsonValue = params.arguments if params.arguments is not None else {}
        try:
            result = await runtime.dispatch_async(params.name, arguments)
        except UnknownToolError as exc:
            # MCP reports a tool name the server does not know as a protocol error; the
            # call is in the transcript all the same (ToolFailed, kind unknown_tool).
            raise MCPError(types.INVALID_PARAMS, exc.message) from None
        except ToolCallError as exc:
            return types.CallToolResult.model_validate(error_result(exc))
        except MiniHarnessError as exc:
            # The transcript could not be written: the server cannot keep its promise.
            raise MCPError(types.INTERNAL_ERROR, exc.message) from None
        return types.CallToolResult.model_validate(success_result(result.output))

    return Server(
        SERVER_NAME,
        version=__version__,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


async def serve_stdio(runtime: ToolRuntime) -> str:
    """Serve one session on stdin/stdout until it ends; return how it ended.

    The session ends at end of input ("end of input"), on SIGTERM or SIGINT (the signal's
    name), or when the client stops reading our output ("client closed its input"). Calls
    still running then are cancelled, which records them as ToolFailed (kind `cancelled`)
    before this returns.
    """
    import anyio
    from mcp.server.stdio import stdio_server

    server = build_server(runtime)
    runtime.start()
    loop = asyncio.get_running_loop()
    ended_by: list[str] = []
    with _claimed_stdin() as wire, anyio.CancelScope() as scope:

        def stop(signum: signal.Signals) -> None:
            ended_by.append(signum.name)
            scope.cancel()

        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, stop, signum)
        try:
            # Our own stdin reader: the SDK's reads in a worker thread that a signal cannot
            # interrupt, so a client that keeps stdin open could never stop us with SIGTERM.
            lines = cast(Any, _StdinLines(wire))
            async with stdio_server(stdin=lines) as (read_stream, write_stream):
                # The SDK points fd 1 at stderr while serving, but Python's own buffered
                # sys.stdout would flush a tool's print() onto the wire at exit.
                with contextlib.redirect_stdout(sys.stderr):
                    options = server.create_initialization_options()
                    await server.run(read_stream, write_stream, options)
        except* BrokenPipeError:
            # Nobody reads our answers any more: the session is over, not the server broken.
            ended_by.append("client closed its input")
        except* (OSError, OutputError) as group:
            # The wire itself failed (answers that cannot be written, input that cannot be
            # read): the first such error, unwrapped from the task group's, for the caller.
            first: BaseException = group
            while isinstance(first, BaseExceptionGroup):
                first = first.exceptions[0]
            raise first from None
        finally:
            for signum in (signal.SIGTERM, signal.SIGINT):
                loop.remove_signal_handler(signum)
    return ended_by[0] if ended_by else "end of input"


@contextlib.contextmanager
def _claimed_stdin() -> Iterator[int]:
    """Move the client's pipe off fd 0 for the session, so tools that read stdin see EOF."""
    wire = fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 3)
    devnull = os.open(os.devnull, os.O_RDONLY)
    try:
        os.dup2(devnull, 0)
    finally:
        os.close(devnull)
    try:
        yield wire
    finally:
        os.set_blocking(wire, True)  # the descriptor may be a terminal shared with a shell
        os.dup2(wire, 0)
        os.close(wire)


class _StdinLines:
    """Lines of the client's input as text, read without a thread so cancelling is instant."""

    def __init__(self, fd: int) -> None:
        self._fd = fd

    async def __aiter__(self) -> AsyncIterator[str]:
        if not _pollable(self._fd):
            # A regular file or /dev/null: nothing to wait for, every read returns at once.
            with os.fdopen(self._fd, "rb", closefd=False) as handle:
                for raw in handle:
                    yield raw.decode("utf-8", errors="replace")
            return
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=_MAX_LINE, loop=loop)
        pipe = os.fdopen(os.dup(self._fd), "rb", buffering=0)
        transport, _ = await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader, loop=loop), pipe
        )
        try:
            while True:
                try:
                    raw = await reader.readline()
                except ValueError:
                    _warn(f"skipped an input line longer than {_MAX_LINE} bytes")
                    continue
                if not raw:
                    return
                yield raw.decode("utf-8", errors="replace")
        finally:
            transport.close()


def _pollable(fd: int) -> bool:
    """True for pipes, sockets and terminals: descriptors the event loop can wait on."""
    with selectors.DefaultSelector() as selector:
        try:
            selector.register(fd, selectors.EVENT_READ)
        except (OSError, ValueError):
            return False
    return True


def _warn(message: str) -> None:
    # stdout belongs to the protocol: diagnostics only ever go to stderr.
    os.write(2, f"[mini-harness] Warning: {message}\n".encode())


def run_stdio(runtime: ToolRuntime) -> str:
    """Run `serve_stdio` on a fresh event loop; see there for the return value. Raises
    OSError (or, under the console script, OutputError) if standard input or output fails
    during the session."""
    return asyncio.run(serve_stdio(runtime))
