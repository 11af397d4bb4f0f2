"""Serve a tool registry to MCP clients over stdio; every call goes through one ToolRuntime.

One server process serves one MCP session, and one session is one run: `RunStarted` is
recorded when serving begins and every `tools/call` appends `ToolCalled` and a terminal
event through `ToolRuntime.dispatch_async`, exactly as the CLI does. The runtime's
approver decides each call; `ElicitingPrompter` lets it ask the client's user.

The `mcp` SDK is an optional extra: only `build_server` and `serve_stdio` import it.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import fcntl
import functools
import os
import signal
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Final, Literal, cast

import orjson

from mini_harness._version import __version__
from mini_harness.errors import (
    GuardError,
    MiniHarnessError,
    OutputError,
    ToolCallError,
    UnknownToolError,
)
from mini_harness.events import JsonObject, JsonValue
from mini_harness.mcp.guard import INTERNAL_ERROR, INVALID_PARAMS, GuardedLines, Wire
from mini_harness.runtime import ToolRuntime
from mini_harness.runtime.definitions import mcp_tool

if TYPE_CHECKING:
    from mcp.server.context import ServerRequestContext
    from mcp.server.lowlevel import Server

SERVER_NAME = "mini-harness"

# The tools/call request being served, for the prompter that asks its client's user.
_REQUEST: contextvars.ContextVar[ServerRequestContext[Any] | None] = contextvars.ContextVar(
    "mini_harness_mcp_request", default=None
)
_CHOICES: Final = ("yes", "session", "no")
APPROVAL_FORM: Final[JsonObject] = {
    "type": "object",
    "properties": {
        "decision": {
            "type": "string",
            "title": "Run this call? (session: yes, and to the like for this session)",
            "enum": list(_CHOICES),
        }
    },
    "required": ["decision"],
}
"""The form an approval question is asked with (MCP elicitation, form mode)."""
CANNOT_ASK: Final = (
    "the MCP client cannot ask its user",
    "the MCP client cannot ask its user (it does not support elicitation)",
)


class ElicitingPrompter:
    """Asks the user of the MCP client whose tools/call is being decided, by elicitation:
    the client shows them the call (escaped, as a terminal prompt would) and one choice.

    A client that did not declare the elicitation capability (form mode) cannot be asked:
    the approver then denies what it would have asked. Declining or dismissing the form is
    a no.
    """

    def unable(self) -> tuple[str, str] | None:
        request = _REQUEST.get()
        if request is None or not request.session.can_send_request:
            return CANNOT_ASK
        declared = request.session.client_capabilities
        elicitation = declared.elicitation if declared is not None else None
        # An empty elicitation capability means form mode, as before modes were named.
        if elicitation is None or (elicitation.form is None and elicitation.url is not None):
            return CANNOT_ASK
        return None

    async def ask(self, shown: str) -> Literal["yes", "no", "session"]:
        request = _REQUEST.get()
        if request is None:
            return "no"
        result = await request.session.elicit_form(
            shown, APPROVAL_FORM, related_request_id=request.request_id
        )
        choice = (result.content or {}).get("decision") if result.action == "accept" else None
        return "yes" if choice == "yes" else "session" if choice == "session" else "no"


# --- result shapes (plain JSON, no SDK needed) ----------------------------------------


def success_result(output: JsonValue) -> JsonObject:
    """A `tools/call` result for a successful dispatch.

    `structuredContent` carries the output when it is a JSON object; MCP before
    2026-07-28 allows nothing else there, so other outputs (strings, numbers, arrays,
    null) travel as the text rendering alone rather than wrapped in an invented object.
    """
    # The text rendering is compact JSON, whatever the output's type.
    result: JsonObject = {"content": [{"type": "text", "text": orjson.dumps(output).decode()}]}
    if isinstance(output, dict):
        result["structuredContent"] = output
    return result


def error_result(error: ToolCallError | str) -> JsonObject:
    """A `tools/call` result for a recorded failure: our message, so the model can react."""
    message = error if isinstance(error, str) else error.message
    return {"content": [{"type": "text", "text": message}], "isError": True}


def list_tools_result(runtime: ToolRuntime) -> JsonObject:
    """The `tools/list` result: each definition exactly as `mcp_tool` gives it."""
    return {"tools": [mcp_tool(definition) for definition in runtime.registry.list()]}


async def call_result(runtime: ToolRuntime, name: str, arguments: JsonValue) -> JsonObject:
    """Dispatch one `tools/call` and return its result; GuardError for a JSON-RPC error.

    A handler that raises SystemExit, KeyboardInterrupt or GeneratorExit ends its call
    (the runtime records it), never the session: the client gets an isError result.
    """
    try:
        result = await runtime.dispatch_async(name, arguments)
    except UnknownToolError as exc:
        # MCP reports a tool name the server does not know as a protocol error; the
        # call is in the transcript all the same (ToolFailed, kind unknown_tool).
        raise GuardError(INVALID_PARAMS, exc.message) from None
    except ToolCallError as exc:
        return error_result(exc)
    except MiniHarnessError as exc:
        # The transcript could not be written: the server cannot keep its promise.
        raise GuardError(INTERNAL_ERROR, exc.message) from None
    except (SystemExit, KeyboardInterrupt, GeneratorExit) as exc:
        return error_result(f"Tool {name} ended the call: {type(exc).__name__}")
    return success_result(result.output)


# --- the SDK-facing server ------------------------------------------------------------


def build_server(runtime: ToolRuntime) -> Server[Any]:
    """An MCP low-level server answering tools/list and tools/call from `runtime`."""
    from mcp import types
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
        serving = _REQUEST.set(ctx)
        try:
            result = await call_result(runtime, params.name, arguments)
        except GuardError as exc:
            raise MCPError(exc.code, exc.message) from None
        finally:
            _REQUEST.reset(serving)
        return types.CallToolResult.model_validate(result)

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
    with _claimed_wire() as (wire_in, wire_out), anyio.CancelScope() as scope:

        def stop(signum: signal.Signals) -> None:
            ended_by.append(signum.name)
            scope.cancel()

        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, stop, signum)
        try:
            # Our own reader (no thread, so SIGTERM stops a session whose client keeps
            # stdin open) with the guard that answers what the SDK would drop, and one
            # writer for the SDK's answers and the guard's.
            wire = Wire(wire_out)
            lines = cast(Any, GuardedLines(wire_in, wire, functools.partial(call_result, runtime)))
            async with stdio_server(stdin=lines, stdout=cast(Any, wire)) as streams:
                read_stream, write_stream = streams
                # fd 1 points at stderr while serving, but Python's own buffered
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
def _claimed_wire() -> Iterator[tuple[int, int]]:
    """Move the client's pipes off fds 0 and 1 for the session: tools that read stdin see
    EOF, and what they print goes to stderr instead of onto the wire."""
    wire_in = fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 3)
    wire_out = fcntl.fcntl(1, fcntl.F_DUPFD_CLOEXEC, 3)
    devnull = os.open(os.devnull, os.O_RDONLY)
    try:
        os.dup2(devnull, 0)
        os.dup2(2, 1)
    finally:
        os.close(devnull)
    try:
        yield wire_in, wire_out
    finally:
        # The descriptors may be a terminal shared with a shell.
        os.set_blocking(wire_in, True)
        os.set_blocking(wire_out, True)
        os.dup2(wire_in, 0)
        os.dup2(wire_out, 1)
        os.close(wire_in)
        os.close(wire_out)


def run_stdio(runtime: ToolRuntime) -> str:
    """Run `serve_stdio` on a fresh event loop; see there for the return value. Raises
    OSError (or, under the console script, OutputError) if standard input or output fails
    during the session."""
    return asyncio.run(serve_stdio(runtime))
