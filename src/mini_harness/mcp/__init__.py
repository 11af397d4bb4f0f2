"""The MCP server: a tool registry served to MCP clients over stdio (`server`), behind a
guard that reads every input line before the SDK does and answers what the SDK would drop
(`guard`).

Every `tools/call` goes through one ToolRuntime, recorded as the CLI records a dispatch.
The `mcp` SDK is an optional extra, imported only when a server is built or served.
"""

from __future__ import annotations

from mini_harness.mcp.guard import MAX_LINE_BYTES
from mini_harness.mcp.server import (
    APPROVAL_FORM,
    SERVER_NAME,
    ElicitingPrompter,
    build_server,
    call_result,
    error_result,
    list_tools_result,
    run_stdio,
    serve_stdio,
    success_result,
)

__all__ = [
    "APPROVAL_FORM",
    "MAX_LINE_BYTES",
    "SERVER_NAME",
    "ElicitingPrompter",
    "build_server",
    "call_result",
    "error_result",
    "list_tools_result",
    "run_stdio",
    "serve_stdio",
    "success_result",
]
