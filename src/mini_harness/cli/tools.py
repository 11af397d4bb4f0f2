"""`mini-harness tools`: print the tool definitions in one ecosystem's shape."""

from __future__ import annotations

from typing import Any

import click

EXPORT_FORMATS = ("json", "mcp", "openai", "anthropic")


@click.command("tools")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(EXPORT_FORMATS),
    default="json",
    show_default=True,
    help="json: mini-harness definitions; mcp: a tools/list result; openai / anthropic: "
    "the `tools` array of those APIs.",
)
def tools_command(fmt: str) -> None:
    """Print the tool definitions (never the handlers) in one ecosystem's shape."""
    from mini_harness.cli import root_workspace
    from mini_harness.runtime.context import pretty_json
    from mini_harness.tools import default_registry

    definitions = default_registry(root_workspace()).list()
    payload: Any
    if fmt == "json":
        payload = [d.to_json() for d in definitions]
    elif fmt == "mcp":
        payload = {"tools": [d.to_mcp() for d in definitions]}
    elif fmt == "openai":
        payload = [d.to_openai() for d in definitions]
    else:
        payload = [d.to_anthropic() for d in definitions]
    click.echo(pretty_json(payload))
