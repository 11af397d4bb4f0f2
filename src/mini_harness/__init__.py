"""mini-harness: an event-sourced tool runtime for coding agents."""

from __future__ import annotations

from mini_harness._version import __version__
from mini_harness.errors import (
    DuplicateToolError,
    InvalidInputError,
    InvalidOutputError,
    InvalidSchemaError,
    InvalidToolNameError,
    MiniHarnessError,
    RegistrationError,
    RejectedInputError,
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
)
from mini_harness.runtime import (
    Field,
    MemorySink,
    ToolAnnotations,
    ToolDefinition,
    ToolRegistry,
    ToolResult,
    ToolRuntime,
)

__all__ = [
    "DuplicateToolError",
    "Field",
    "InvalidInputError",
    "InvalidOutputError",
    "InvalidSchemaError",
    "InvalidToolNameError",
    "MemorySink",
    "MiniHarnessError",
    "RegistrationError",
    "RejectedInputError",
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
    "__version__",
]
