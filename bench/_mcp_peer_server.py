"""The peer for bench/peer_mcp.py: the MCP SDK's own MCPServer serving one echo tool on stdio.

Run as a script by the benchmark; never imported by the package.
"""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer

server = MCPServer("echo-peer")


@server.tool()
def echo(text: str) -> dict[str, str]:
    """Return the text it was given."""
    return {"text": text}


if __name__ == "__main__":
    server.run("stdio")
