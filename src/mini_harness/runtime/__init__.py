"""The runtime layer: tool definitions, the registry, validation and dispatch. No log I/O here.

Typed tools (`ToolRegistry.tool`, `Field`, cattrs) and the Context Explorer report load
when first used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mini_harness._exports import lazy_names
from mini_harness.events.vocabulary import MemorySink
from mini_harness.runtime.definitions import (
    ToolAnnotations,
    ToolDefinition,
    anthropic_tool,
    mcp_tool,
    openai_tool,
)
from mini_harness.runtime.dispatch import ToolRuntime
from mini_harness.runtime.registry import ToolRegistry
from mini_harness.runtime.results import ToolResult, display_failure, display_result, tool_error

if TYPE_CHECKING:
    from mini_harness.runtime.context_report import (
        dispatch_context,
        render_context_report,
    )
    from mini_harness.runtime.schema_derive import Field
else:  # type checkers see the names above; at run time they are imported on first use
    __getattr__ = lazy_names(
        __name__,
        {
            "mini_harness.runtime.context_report": (
                "dispatch_context",
                "render_context_report",
            ),
            "mini_harness.runtime.schema_derive": ("Field",),
        },
    )

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
    "mcp_tool",
    "openai_tool",
    "render_context_report",
    "tool_error",
]
