"""mini-harness: an event-sourced tool runtime for coding agents.

The public names are re-exported here but imported on first use, so that `import
mini_harness.cli` (every CLI start) does not pay for layers a command does not touch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mini_harness._lazy import lazy_exports
from mini_harness._version import __version__

if TYPE_CHECKING:
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
    )

_RUNTIME_NAMES = frozenset(
    {
        "Field",
        "MemorySink",
        "ToolAnnotations",
        "ToolDefinition",
        "ToolRegistry",
        "ToolResult",
        "ToolRuntime",
    }
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
]


_HOMES = {name: "runtime" if name in _RUNTIME_NAMES else "errors" for name in __all__}
_HOMES.pop("__version__")
__getattr__, __dir__ = lazy_exports(__name__, _HOMES, globals())
