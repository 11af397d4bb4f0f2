"""`mini-harness tools`: print the tool definitions in one ecosystem's shape."""

from __future__ import annotations

import click

from mini_harness.cli.options import SingleOption, root_workspace
from mini_harness.cli.registry_spec import chosen_registry, registry_option
from mini_harness.runtime.context_report import pretty_json
from mini_harness.runtime.definitions import anthropic_tool, mcp_tool, openai_tool

SHAPES = {
    "json": mcp_tool,
    "mcp": mcp_tool,
    "openai": openai_tool,
    "anthropic": anthropic_tool,
}
"""How each --format writes one definition."""


@click.command("tools")
@click.option(
    "--format",
    "fmt",
    cls=SingleOption,
    type=click.Choice(list(SHAPES)),
    default="json",
    show_default=True,
    help="json: mini-harness definitions; mcp: a tools/list result; openai / anthropic: "
    "the `tools` array of those APIs.",
)
@registry_option()
def tools_command(fmt: str, registry_spec: str | None) -> None:
    """Print the tool definitions (never the handlers) in one ecosystem's shape."""
    definitions = chosen_registry(registry_spec, root_workspace()).list()
    tools = [SHAPES[fmt](definition) for definition in definitions]
    # An MCP tools/list result is an object; the APIs take the array itself.
    click.echo(pretty_json({"tools": tools} if fmt == "mcp" else tools))
