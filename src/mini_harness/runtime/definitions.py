"""Model-side tool definitions: what a model sees of a tool, never its handler.

`ToolDefinition` and `ToolAnnotations` are declared with the events that record them
(RunStarted snapshots every definition); this module adds the rule for names and the
shapes each ecosystem's API takes a definition in.
"""

from __future__ import annotations

import re

from mini_harness.events import JsonObject, ToolAnnotations, ToolDefinition, to_wire

__all__ = [
    "TOOL_NAME_PATTERN",
    "ToolAnnotations",
    "ToolDefinition",
    "anthropic_tool",
    "mcp_tool",
    "openai_tool",
]

TOOL_NAME_PATTERN = re.compile(r"[a-zA-Z0-9_-]{1,64}")
"""What a tool name may be; matched against the whole name (`fullmatch`)."""


def mcp_tool(definition: ToolDefinition) -> JsonObject:
    """MCP `tools/list` entry: the definition as mini-harness records it (camelCase keys,
    hints and output schema only when given)."""
    wire: JsonObject = to_wire(definition)
    return wire


def openai_tool(definition: ToolDefinition) -> JsonObject:
    """OpenAI Chat Completions `tools` entry."""
    return {
        "type": "function",
        "function": {
            "name": definition.name,
            "description": definition.description,
            "parameters": definition.input_schema,
        },
    }


def anthropic_tool(definition: ToolDefinition) -> JsonObject:
    """Anthropic Messages API `tools` entry."""
    return {
        "name": definition.name,
        "description": definition.description,
        "input_schema": definition.input_schema,
    }
