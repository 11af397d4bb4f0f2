"""The agent layer: model providers, the observe-decide-act loop, context and approval.

Depends on runtime and events only; provider SDKs are imported where they are used.
"""

from __future__ import annotations

from mini_harness.agent.provider import (
    FINISH_REASONS,
    MODEL_ERROR_KINDS,
    Message,
    ModelError,
    ModelProvider,
    ModelRequest,
    ModelResponse,
    ToolCall,
    Usage,
)

__all__ = [
    "FINISH_REASONS",
    "MODEL_ERROR_KINDS",
    "Message",
    "ModelError",
    "ModelProvider",
    "ModelRequest",
    "ModelResponse",
    "ToolCall",
    "Usage",
]
