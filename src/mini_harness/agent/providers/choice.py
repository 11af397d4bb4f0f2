"""Choosing the model provider from `--model PROVIDER:MODEL` and the environment.

Without `--model`, the first key found decides, as in the reference harness:
DEEPSEEK_API_KEY, then OPENAI_API_KEY, then ANTHROPIC_API_KEY; with none, the mock model
(deterministic, no network).
The caller may name the model for a provider chosen without one (`model_name`: the CLI's
settings hold the model's name alone that MINI_HARNESS_MODEL gives). A remote provider is
chosen without its SDK, which is imported when it sends its first request (`remote`). How
long an attempt may take and how often a failed one is tried again come from the caller
(the CLI's settings), else the defaults; this module reads no MINI_HARNESS_ variable.

A provider that holds secrets (the SDK providers: their API key) lists them in `secrets`;
whoever prints or records what a run produced redacts them (`provider_secrets`).
"""

from __future__ import annotations

import importlib.util
import urllib.parse
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import attrs

from mini_harness.agent.providers.interface import ModelProvider
from mini_harness.agent.providers.mock import MockProvider
from mini_harness.agent.providers.remote import WIRES, RemoteProvider
from mini_harness.agent.providers.script import ScriptProvider
from mini_harness.errors import ProviderSetupError
from mini_harness.events.redaction import PROVIDER_KEY_VARIABLES
from mini_harness.runtime.request_limits import (
    DEFAULT_RETRIES,
    DEFAULT_TIMEOUT,
)

PROVIDER_NAMES = ("anthropic", "deepseek", "mock", "openai", "openai-compatible", "script")


@runtime_checkable
class HoldsSecrets(Protocol):
    """A provider with secrets no output may show (the SDK providers: their API key)."""

    @property
    def secrets(self) -> tuple[str, ...]: ...


def provider_secrets(provider: ModelProvider) -> tuple[str, ...]:
    """The secrets `provider` holds; none for the mock and scripted providers."""
    return provider.secrets if isinstance(provider, HoldsSecrets) else ()


# Each remote provider: the variable of its API key (events/redaction.py's table), the
# variable of its base URL, its default base URL and its default model.
_REMOTES: dict[str, tuple[str, str, str | None, str]] = {
    "deepseek": (
        PROVIDER_KEY_VARIABLES["deepseek"],
        "DEEPSEEK_BASE_URL",
        "https://api.deepseek.com",
        "deepseek-v4-flash",
    ),
    "openai": (
        PROVIDER_KEY_VARIABLES["openai"],
        "OPENAI_BASE_URL",
        "https://api.openai.com/v1",
        "gpt-4o-mini",
    ),
    # A local or third-party server: OPENAI_BASE_URL is required, a key is optional.
    "openai-compatible": (PROVIDER_KEY_VARIABLES["openai"], "OPENAI_BASE_URL", None, "gpt-4o-mini"),
    "anthropic": (
        PROVIDER_KEY_VARIABLES["anthropic"],
        "ANTHROPIC_BASE_URL",
        "https://api.anthropic.com",
        "claude-haiku-4-5",
    ),
}


@attrs.frozen
class RequestLimits:
    """How long each attempt of a model request may take, and how often one that failed
    is tried again; None: the default. The CLI passes what its settings say (the flags,
    MINI_HARNESS_MODEL_TIMEOUT and _RETRIES, the config files: cli/settings.py)."""

    timeout: float | None = None
    retries: int | None = None

    def resolved(self) -> tuple[float, int]:
        """(timeout, retries): given, else the defaults."""
        timeout = DEFAULT_TIMEOUT if self.timeout is None else self.timeout
        retries = DEFAULT_RETRIES if self.retries is None else self.retries
        return timeout, retries


def _setting(env: Mapping[str, str], name: str) -> str | None:
    value = env.get(name, "").strip()
    return value or None


def _check_url(url: str, name: str) -> None:
    """A ProviderSetupError naming the variable `name` unless `url` is an http or https
    URL with a host (and, if it has one, a port that is a number)."""
    try:
        parts = urllib.parse.urlsplit(url)
        usable = parts.port is None or parts.port > 0  # a port that is not a number raises
    except ValueError as exc:
        raise ProviderSetupError(f"{name}={url!r}: {exc}") from None
    if not (usable and parts.scheme in {"http", "https"} and parts.hostname):
        raise ProviderSetupError(
            f"{name}={url!r}: expected an http:// or https:// URL with a host "
            "(e.g. http://127.0.0.1:8000/v1)"
        )
    if not url.isprintable() or " " in url:
        raise ProviderSetupError(f"{name}={url!r}: a URL has no spaces or control characters")


def choose_provider(
    model_spec: str | None,
    env: Mapping[str, str],
    limits: RequestLimits | None = None,
    *,
    model_name: str | None = None,
) -> ModelProvider:
    """The provider `--model` names (None: the environment's choice).

    `model_spec` is `PROVIDER:MODEL`, `PROVIDER` alone (`model_name`, else its default
    model), `mock` or `script:FILE`; `limits` apply to the providers that send requests.
    """
    limits = limits or RequestLimits()
    if model_spec is None:
        for provider, key_variable in PROVIDER_KEY_VARIABLES.items():
            if _setting(env, key_variable):
                return _remote(provider, model_name, env, limits)
        return MockProvider("mock")
    provider, _, model = model_spec.partition(":")
    provider = provider.strip().lower()
    model = model.strip()
    if provider == "mock":
        return MockProvider(model or "mock")
    if provider == "script":
        if not model:
            raise ProviderSetupError("--model script:FILE needs a file: script:path/to/script.json")
        return ScriptProvider(Path(model))
    if provider not in _REMOTES:
        raise ProviderSetupError(
            f"Unknown model provider {provider!r} in --model {model_spec!r} "
            f"(known: {', '.join(PROVIDER_NAMES)})"
        )
    return _remote(provider, model or model_name, env, limits)


def recorded_choice(provider: str, model: str) -> str | None:
    """The `--model` that chooses again the provider a run recorded (RunStarted's `model`:
    its `provider` as printed, and the model's `name`), or None when mini-harness has no
    such provider (an imported session's may name any).

    Runs record the provider as `--model` names it (`openai:gpt-4o-mini`, `script:FILE`);
    `mock` and an imported session's `anthropic` or `openai` name the model apart. A run
    recorded before the provider was named so says `openai-compatible:MODEL` for OpenAI and
    DeepSeek too: chosen again as written, it needs OPENAI_BASE_URL.
    """
    name, colon, _ = provider.partition(":")
    if name not in PROVIDER_NAMES:
        return None
    if colon:
        return provider
    return f"{name}:{model}" if model else name


def _remote(
    provider: str, model: str | None, env: Mapping[str, str], limits: RequestLimits
) -> ModelProvider:
    key_variable, url_variable, default_base_url, default_model = _REMOTES[provider]
    model = model or default_model
    base_url = _setting(env, url_variable) or default_base_url
    api_key = _setting(env, key_variable)
    if provider == "openai-compatible":
        if base_url is None:
            raise ProviderSetupError(
                "--model openai-compatible:MODEL needs OPENAI_BASE_URL (the server's URL, "
                "e.g. http://127.0.0.1:8000/v1)"
            )
        # Local servers (vLLM, Ollama, llama.cpp) usually take any key or none.
        api_key = api_key or "unused"
    elif api_key is None:
        raise ProviderSetupError(f"The {provider} provider needs {key_variable} in the environment")
    sdk = "anthropic" if provider == "anthropic" else "openai"
    if importlib.util.find_spec(sdk) is None:
        raise ProviderSetupError(
            f"The {provider} provider needs the {sdk} SDK: pip install 'mini-harness[{sdk}]'"
        )
    timeout, retries = limits.resolved()
    assert base_url is not None  # every remote provider has a default or requires one
    _check_url(base_url, url_variable)  # a default is never refused
    # A 404's message names the variable the base URL came from, or the default it took.
    setting = url_variable if _setting(env, url_variable) else "the base URL"
    common: dict[str, Any] = {
        "api_key": api_key,
        "base_url": base_url,
        "timeout": timeout,
        "max_retries": retries,
        "base_url_setting": setting,
    }
    return RemoteProvider(WIRES[sdk], model, chosen=provider, **common)
