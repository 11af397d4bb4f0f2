"""`echo`: returns its input. The smallest tool that exercises every path of dispatch."""

from __future__ import annotations

from mini_harness.events import JsonValue
from mini_harness.runtime import ToolAnnotations, ToolDefinition

ECHO = ToolDefinition(
    name="echo",
    description="Return the provided input unchanged. Useful to check that tool dispatch works.",
    input_schema={
        "type": "object",
        "properties": {"text": {"type": "string", "description": "Text to return."}},
        "required": ["text"],
    },
    annotations=ToolAnnotations(read_only_hint=True, idempotent_hint=True),
)


def echo(tool_input: JsonValue) -> JsonValue:
    return tool_input
