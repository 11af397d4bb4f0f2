"""`mini-harness tools`: the tools an agent run gets, as a table or in one ecosystem's shape."""

from __future__ import annotations

import shutil
import sys
from collections.abc import Callable

import click

from mini_harness.cli.options import SingleOption, root_workspace
from mini_harness.cli.output import echo, echo_json
from mini_harness.cli.registry_spec import agent_tools, registry_option
from mini_harness.events import JsonObject
from mini_harness.runtime.definitions import (
    ToolDefinition,
    anthropic_tool,
    mcp_tool,
    openai_tool,
)

SHAPES: dict[str, Callable[[ToolDefinition], JsonObject]] = {
    "json": mcp_tool,
    "mcp": mcp_tool,
    "openai": openai_tool,
    "anthropic": anthropic_tool,
}
"""How each --format writes one definition."""


def _table(definitions: list[ToolDefinition]) -> str:
    """One row per tool: its name, whether calls to it ask for approval, and the first
    line of its description, cut to the terminal's width."""
    width = shutil.get_terminal_size().columns
    name_width = max([len("TOOL"), *(len(d.name) for d in definitions)])
    rows = [f"{'TOOL':<{name_width}}  {'READ-ONLY':<9}  DESCRIPTION"]
    for definition in definitions:
        hints = definition.annotations
        read_only = "yes" if hints is not None and hints.read_only_hint else "no"
        summary = next(iter(definition.description.strip().splitlines()), "")
        row = f"{definition.name:<{name_width}}  {read_only:<9}  {summary}"
        rows.append(row if len(row) <= width else row[: max(width - 3, 0)] + "...")
    return "\n".join(rows)


@click.command("tools")
@click.option(
    "--format",
    "fmt",
    cls=SingleOption,
    type=click.Choice(["table", *SHAPES]),
    default=None,
    help="table: one line per tool (the default on a terminal); json: mini-harness "
    "definitions (the default otherwise); mcp: a tools/list result; openai / anthropic: "
    "the `tools` array of those APIs.",
)
@registry_option()
def tools_command(fmt: str | None, registry_spec: str | None) -> None:
    """Print the tools an agent run gets (never the handlers): the built-in ones in the
    workspace, or --registry's. Those marked as changing something ask for approval
    under the workspace's policy (`--approve`)."""
    definitions = agent_tools(registry_spec, root_workspace()).list()
    if fmt is None:
        fmt = "table" if sys.stdout.isatty() else "json"
    # What a registry describes its tools with reaches the terminal escaped (cli/output.py).
    if fmt == "table":
        echo(_table(definitions))
        return
    tools = [SHAPES[fmt](definition) for definition in definitions]
    # An MCP tools/list result is an object; the APIs take the array itself.
    echo_json({"tools": tools} if fmt == "mcp" else tools, indent=True)
