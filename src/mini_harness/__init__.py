"""mini-harness: an event-sourced tool runtime for coding agents."""

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
    MemorySink,
    ToolAnnotations,
    ToolDefinition,
    ToolRegistry,
    ToolResult,
    ToolRuntime,
)

__all__ = [
    "DuplicateToolError",
    "InvalidInputError",
    "InvalidOutputError",
    "InvalidPatternError",
    "InvalidSchemaError",
    "InvalidToolNameError",
    "MemorySink",
    "MiniHarnessError",
    "RegistrationError",
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
]
