"""Model providers behind one interface (`interface`): the mock and scripted models, the
SDK providers (OpenAI-compatible Chat Completions, Anthropic Messages) and choosing one
from `--model` and the environment (`choice`).

The SDK providers' modules, and their SDKs, are imported only when a chosen one sends its
first request.
"""

from __future__ import annotations

from mini_harness.agent.providers.choice import (
    PROVIDER_NAMES,
    HoldsSecrets,
    RequestLimits,
    choose_provider,
    provider_secrets,
    recorded_choice,
)
from mini_harness.agent.providers.interface import (
    FINISH_REASONS,
    MODEL_ERROR_KINDS,
    ModelProvider,
    ModelRequest,
    ModelResponse,
)
from mini_harness.agent.providers.mock import MockProvider
from mini_harness.agent.providers.script import ScriptProvider, parse_script
from mini_harness.events.redaction import configured_keys  # what a run's output hides

__all__ = [
    "FINISH_REASONS",
    "MODEL_ERROR_KINDS",
    "PROVIDER_NAMES",
    "HoldsSecrets",
    "MockProvider",
    "ModelProvider",
    "ModelRequest",
    "ModelResponse",
    "RequestLimits",
    "ScriptProvider",
    "choose_provider",
    "configured_keys",
    "parse_script",
    "provider_secrets",
    "recorded_choice",
]
