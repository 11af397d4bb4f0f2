"""mini-harness: an event-sourced tool runtime for coding agents.

The documented API: the runtime (registry, definitions, dispatch) and the error hierarchy.
Everything else is imported from its layer (`mini_harness.transcripts`, `.replay`, ...).
The runtime's names are imported when first used: a command imports what it runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mini_harness._exports import lazy_names
from mini_harness._version import __version__
from mini_harness.errors import (
    DuplicateToolError,
    InvalidInputError,
    InvalidOutputError,
    InvalidPatternError,
    InvalidSchemaError,
    InvalidToolNameError,
    MiniHarnessError,
    RegistrationError,
    RegistrySpecError,
    RejectedInputError,
    RemoteSchemaError,
    ReplayError,
    SchemaDerivationError,
    ToolCallError,
    ToolCancelledError,
    ToolHandlerError,
    ToolTimeoutError,
    TranscriptCorruptError,
    TranscriptError,
    TranscriptFormatError,
    TranscriptWriteError,
    UnknownToolError,
    WorkspaceError,
)

if TYPE_CHECKING:
    from mini_harness.runtime import (
        Field,
        MemorySink,
        ToolAnnotations,
        ToolDefinition,
        ToolRegistry,
        ToolResult,
        ToolRuntime,
        anthropic_tool,
        mcp_tool,
        openai_tool,
    )
else:  # type checkers see the names above; at run time they are imported on first use
    __getattr__ = lazy_names(
        __name__,
        {
            "mini_harness.runtime": (
                "Field",
                "MemorySink",
                "ToolAnnotations",
                "ToolDefinition",
                "ToolRegistry",
                "ToolResult",
                "ToolRuntime",
                "anthropic_tool",
                "mcp_tool",
                "openai_tool",
            )
        },
    )

__all__ = [
    "DuplicateToolError",
    "Field",
    "InvalidInputError",
    "InvalidOutputError",
    "InvalidPatternError",
    "InvalidSchemaError",
    "InvalidToolNameError",
    "MemorySink",
    "MiniHarnessError",
    "RegistrationError",
    "RegistrySpecError",
    "RejectedInputError",
    "RemoteSchemaError",
    "ReplayError",
    "SchemaDerivationError",
    "ToolAnnotations",
    "ToolCallError",
    "ToolCancelledError",
    "ToolDefinition",
    "ToolHandlerError",
    "ToolRegistry",
    "ToolResult",
    "ToolRuntime",
    "ToolTimeoutError",
    "TranscriptCorruptError",
    "TranscriptError",
    "TranscriptFormatError",
    "TranscriptWriteError",
    "UnknownToolError",
    "WorkspaceError",
    "__version__",
    "anthropic_tool",
    "mcp_tool",
    "openai_tool",
]
