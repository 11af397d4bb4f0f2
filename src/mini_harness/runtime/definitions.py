"""Model-side tool definitions: what a model sees of a tool, never its handler."""

from __future__ import annotations

import re

import attrs

from mini_harness.events import JsonObject

TOOL_NAME_PATTERN = re.compile(r"[a-zA-Z0-9_-]{1,64}")
"""What a tool name may be; matched against the whole name (`fullmatch`)."""

# MCP's fields, in the order MCP documents them; wire keys are camelCase.
_FIELDS = (
    ("title", "title"),
    ("read_only_hint", "readOnlyHint"),
    ("destructive_hint", "destructiveHint"),
    ("idempotent_hint", "idempotentHint"),
    ("open_world_hint", "openWorldHint"),
)


@attrs.frozen
class ToolAnnotations:
    """Behaviour hints in MCP's vocabulary; None means "not said"."""

    title: str | None = None
    read_only_hint: bool | None = None
    destructive_hint: bool | None = None
    idempotent_hint: bool | None = None
    open_world_hint: bool | None = None

    def to_json(self) -> JsonObject:
        said = ((key, getattr(self, attr)) for attr, key in _FIELDS)
        return {key: value for key, value in said if value is not None}

    @classmethod
    def from_json(cls, data: JsonObject) -> ToolAnnotations:
        return cls(**{attr: data.get(key) for attr, key in _FIELDS})

    @property
    def safe_to_repeat(self) -> bool:
        """True when re-running the tool cannot change the world (read-only or idempotent)."""
        return bool(self.read_only_hint or self.idempotent_hint)


@attrs.frozen
class ToolDefinition:
    """A tool as a model sees it: name, description, input schema and hints."""

    name: str
    description: str
    input_schema: JsonObject
    annotations: ToolAnnotations | None = None
    output_schema: JsonObject | None = None

    def to_json(self) -> JsonObject:
        """The definition in mini-harness' own shape (also what RunStarted records)."""
        out: JsonObject = {
            "name": self.name,
            "description": self.description,
            "inputSchema": self.input_schema,
        }
        if self.output_schema is not None:
            out["outputSchema"] = self.output_schema
        if self.annotations is not None:
            hints = self.annotations.to_json()
            if hints:
                out["annotations"] = hints
        return out

    @classmethod
    def from_json(cls, data: JsonObject) -> ToolDefinition:
        annotations = data.get("annotations")
        return cls(
            name=data["name"],
            description=data.get("description", ""),
            input_schema=data.get("inputSchema", {}),
            annotations=ToolAnnotations.from_json(annotations) if annotations else None,
            output_schema=data.get("outputSchema"),
        )

    def to_mcp(self) -> JsonObject:
        """MCP `tools/list` entry."""
        return self.to_json()

    def to_openai(self) -> JsonObject:
        """OpenAI Chat Completions `tools` entry."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.input_schema,
            },
        }

    def to_anthropic(self) -> JsonObject:
        """Anthropic Messages API `tools` entry."""
        return {
            "name": self.name,
            "description": self.description,
            "input_schema": self.input_schema,
        }
