"""The runtime layer: definitions, registry, validation, dispatch and events. No log I/O here.

Names are imported on first use: a CLI dispatch of a plain tool never loads typed-tool
support (cattrs, schema derivation) or the Context Explorer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mini_harness._lazy import lazy_exports

if TYPE_CHECKING:
    from mini_harness.runtime.context import (
        ContextPart,
        ContextRow,
        dispatch_context,
        estimate_tokens,
        render_context_report,
    )
    from mini_harness.runtime.definitions import TOOL_NAME_PATTERN, ToolAnnotations, ToolDefinition
    from mini_harness.runtime.dispatch import (
        ToolResult,
        ToolRuntime,
        display_failure,
        display_result,
        round_half_up,
    )
    from mini_harness.runtime.memory import MemorySink, Recorded
    from mini_harness.runtime.registry import Handler, RegisteredTool, ToolRegistry
    from mini_harness.runtime.schema_derive import Field
    from mini_harness.runtime.typed import derive_tool
    from mini_harness.runtime.validation import InputValidator
    from mini_harness.runtime.violation import Violation

_WHERE = {
    "context": (
        "ContextPart",
        "ContextRow",
        "dispatch_context",
        "estimate_tokens",
        "render_context_report",
    ),
    "definitions": ("TOOL_NAME_PATTERN", "ToolAnnotations", "ToolDefinition"),
    "dispatch": ("ToolResult", "ToolRuntime", "display_failure", "display_result", "round_half_up"),
    "memory": ("MemorySink", "Recorded"),
    "registry": ("Handler", "RegisteredTool", "ToolRegistry"),
    "schema_derive": ("Field",),
    "typed": ("derive_tool",),
    "validation": ("InputValidator",),
    "violation": ("Violation",),
}
_MODULE_OF = {name: module for module, names in _WHERE.items() for name in names}

__all__ = [
    "TOOL_NAME_PATTERN",
    "ContextPart",
    "ContextRow",
    "Field",
    "Handler",
    "InputValidator",
    "MemorySink",
    "Recorded",
    "RegisteredTool",
    "ToolAnnotations",
    "ToolDefinition",
    "ToolRegistry",
    "ToolResult",
    "ToolRuntime",
    "Violation",
    "derive_tool",
    "dispatch_context",
    "display_failure",
    "display_result",
    "estimate_tokens",
    "render_context_report",
    "round_half_up",
]


__getattr__, __dir__ = lazy_exports(__name__, _MODULE_OF, globals())
