"""mini-harness: an event-sourced tool runtime for coding agents.

The documented API: the runtime (registry, definitions, dispatch) and the error hierarchy.
Everything else is imported from its layer (`mini_harness.transcripts`, `.replay`, ...).
"""

from __future__ import annotations

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
