"""The runtime layer: tool definitions, the registry, validation and dispatch. No log I/O here.

Typed tools (`ToolRegistry.tool`, cattrs) load when the first typed tool is registered.
"""

from __future__ import annotations

from mini_harness.events.vocabulary import MemorySink
from mini_harness.runtime.context_report import (
    dispatch_context,
    estimate_tokens,
    render_context_report,
)
from mini_harness.runtime.definitions import (
    ToolAnnotations,
    ToolDefinition,
    anthropic_tool,
    mcp_tool,
    openai_tool,
)
from mini_harness.runtime.dispatch import ToolRuntime
from mini_harness.runtime.registry import ToolRegistry
from mini_harness.runtime.results import ToolResult, display_failure, display_result
from mini_harness.runtime.schema_derive import Field

__all__ = [
    "Field",
    "MemorySink",
    "ToolAnnotations",
    "ToolDefinition",
    "ToolRegistry",
    "ToolResult",
    "ToolRuntime",
    "anthropic_tool",
    "dispatch_context",
    "display_failure",
    "display_result",
    "estimate_tokens",
    "mcp_tool",
    "openai_tool",
    "render_context_report",
]
