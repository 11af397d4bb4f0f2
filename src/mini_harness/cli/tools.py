"""`mini-harness tools`: print the tool definitions in one ecosystem's shape."""

from __future__ import annotations

from typing import Any

import click

from mini_harness.cli import root_workspace
from mini_harness.cli.options import SingleOption
from mini_harness.cli.registry_spec import chosen_registry, registry_option
from mini_harness.runtime.context import pretty_json

EXPORT_FORMATS = ("json", "mcp", "openai", "anthropic")


@click.command("tools")
@click.option(
    "--format",
    "fmt",
    cls=SingleOption,
    type=click.Choice(EXPORT_FORMATS),
    default="json",
    show_default=True,
    help="json: mini-harness definitions; mcp: a tools/list result; openai / anthropic: "
    "the `tools` array of those APIs.",
)
@registry_option(
    "List this ToolRegistry (or a zero-argument callable returning one) instead of the "
    "built-in tools. The current directory is importable."
)
def tools_command(fmt: str, registry_spec: str | None) -> None:
    """Print the tool definitions (never the handlers) in one ecosystem's shape."""
    definitions = chosen_registry(registry_spec, root_workspace()).list()
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
