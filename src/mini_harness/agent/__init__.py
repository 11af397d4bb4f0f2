"""The agent layer: the observe-decide-act loop, what it is given (`config`), the context
builder (`context`), how each call gets its one result (`pairing`), what a front end hears
(`reporting`), model providers (`providers`) and approval (`approval`, imported on its
own: its shell grammar is loaded only where calls are approved).

Depends on runtime and events only; provider SDKs are imported where they are used.
"""

from __future__ import annotations

from mini_harness.agent.config import DEFAULT_MAX_STEPS, DEFAULT_PARAMS, AgentConfig, Opening
from mini_harness.agent.context import (
    DEFAULT_SYSTEM_PROMPT,
    context_report,
    load_project_rules,
    request_hash,
    request_parts,
    system_message,
)
from mini_harness.agent.loop import AgentLoop, AgentOutcome
from mini_harness.agent.pairing import INTERRUPTED_RESULT, check_history
from mini_harness.agent.providers import (
    FINISH_REASONS,
    MODEL_ERROR_KINDS,
    MockProvider,
    ModelProvider,
    ModelRequest,
    ModelResponse,
    RequestLimits,
    ScriptProvider,
    choose_provider,
    configured_keys,
    provider_secrets,
    recorded_choice,
)
from mini_harness.agent.reporting import LoopReporter, SilentReporter, ToolOutcome, call_outcome
from mini_harness.errors import ModelError
from mini_harness.events import Message, ToolCall, Usage

__all__ = [
    "DEFAULT_MAX_STEPS",
    "DEFAULT_PARAMS",
    "DEFAULT_SYSTEM_PROMPT",
    "FINISH_REASONS",
    "INTERRUPTED_RESULT",
    "MODEL_ERROR_KINDS",
    "AgentConfig",
    "AgentLoop",
    "AgentOutcome",
    "LoopReporter",
    "Message",
    "MockProvider",
    "ModelError",
    "ModelProvider",
    "ModelRequest",
    "ModelResponse",
    "Opening",
    "RequestLimits",
    "ScriptProvider",
    "SilentReporter",
    "ToolCall",
    "ToolOutcome",
    "Usage",
    "call_outcome",
    "check_history",
    "choose_provider",
    "configured_keys",
    "context_report",
    "load_project_rules",
    "provider_secrets",
    "recorded_choice",
    "request_hash",
    "request_parts",
    "system_message",
]
