"""Choosing the model provider from `--model PROVIDER:MODEL` and the environment."""

from __future__ import annotations

import gc
import importlib.util
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mini_harness.agent import Message, ModelRequest, RequestLimits, choose_provider
from mini_harness.agent.providers import choice
from mini_harness.errors import ModelError, ProviderSetupError
from mini_harness.events.redaction import PROVIDER_KEY_VARIABLES, configured_keys
from tests.agent.wire_servers import AnthropicWireServer, Failure, OpenAIWireServer, Turn

HELLO = ModelRequest(messages=(Message("user", "hello"),))


@pytest.fixture(name="openai_server")
def _openai_server() -> Iterator[OpenAIWireServer]:
    with OpenAIWireServer() as server:
        yield server


@pytest.fixture(name="local_providers")
def _local_providers(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[object]]:
    """Stand-ins for the mock and script providers; each records what it was made with."""
    made: dict[str, list[object]] = {"MockProvider": [], "ScriptProvider": []}
    for cls_name in made:

        class StandIn:
            name = cls_name
            model = cls_name

            def __init__(self, argument: object, _cls: str = cls_name) -> None:
                made[_cls].append(argument)

        monkeypatch.setattr(choice, cls_name, StandIn)
    return made


class TestEnvironmentChoice:
    @pytest.mark.parametrize("provider", ["deepseek", "openai", "anthropic"])
    def test_the_key_that_chooses_a_provider_is_the_key_every_command_hides(
        self, provider: str
    ) -> None:
        """Each provider's key variable, alone in the environment, chooses that provider,
        whose secret is the key every command hides (configured_keys): one table."""
        variable = PROVIDER_KEY_VARIABLES[provider]
        env = {variable: f"sk-{provider}-0123456789abcdef"}
        chosen = choose_provider(None, env)
        assert chosen.name.startswith(f"{provider}:")
        assert choice.provider_secrets(chosen) == configured_keys(env) == (env[variable],)

    def test_deepseek_key_comes_first(self) -> None:
        """With DeepSeek and OpenAI keys both set, DeepSeek is chosen, with its default model."""
        provider = choose_provider(None, {"DEEPSEEK_API_KEY": "d", "OPENAI_API_KEY": "o"})
        assert (provider.name, provider.model) == (
            "deepseek:deepseek-v4-flash",
            "deepseek-v4-flash",
        )

    def test_openai_key_and_base_url_reach_the_server(
        self, openai_server: OpenAIWireServer
    ) -> None:
        """OPENAI_API_KEY and OPENAI_BASE_URL choose the OpenAI provider (openai:...), which
        sends its requests there with the default model."""
        openai_server.script(Turn(text="hi"))
        env = {"OPENAI_API_KEY": "sk-env", "OPENAI_BASE_URL": openai_server.base_url}
        provider = choose_provider(None, env)
        assert provider.name == "openai:gpt-4o-mini"
        assert provider.complete(HELLO).message.content == "hi"
        request = openai_server.requests[0]
        assert request.body["model"] == "gpt-4o-mini"
        assert request.headers["authorization"] == "Bearer sk-env"

    def test_model_name_names_the_model_of_the_provider_chosen(self) -> None:
        """`model_name` (what the CLI's MINI_HARNESS_MODEL gives) names the model of a
        provider chosen without one; MINI_HARNESS_ variables are the settings' to read."""
        env = {"OPENAI_API_KEY": "o", "MINI_HARNESS_MODEL": "gpt-4.1"}
        assert choose_provider(None, env).name == "openai:gpt-4o-mini"
        named = choose_provider(None, env, model_name="gpt-4.1")
        assert named.name == "openai:gpt-4.1"
        assert choose_provider("openai", env, model_name="gpt-4.1").model == "gpt-4.1"
        assert choose_provider("openai:o3", env, model_name="gpt-4.1").model == "o3"

    def test_anthropic_key_and_base_url_reach_the_server(self) -> None:
        """ANTHROPIC_API_KEY (and ANTHROPIC_BASE_URL) choose the Anthropic provider."""
        with AnthropicWireServer(api_key="sk-ant-env") as server:
            server.script(Turn(text="hi"))
            env = {"ANTHROPIC_API_KEY": "sk-ant-env", "ANTHROPIC_BASE_URL": server.base_url}
            provider = choose_provider(None, env)
            assert provider.name == "anthropic:claude-haiku-4-5"
            assert provider.complete(HELLO).message.content == "hi"

    def test_empty_keys_count_as_unset(self) -> None:
        """A key set to the empty string does not choose its provider."""
        provider = choose_provider(None, {"DEEPSEEK_API_KEY": "", "ANTHROPIC_API_KEY": "a"})
        assert provider.name.startswith("anthropic:")

    def test_no_key_is_the_mock(self, local_providers: dict[str, list[object]]) -> None:
        """Without any key the mock is chosen (made with model name `mock`)."""
        provider = choose_provider(None, {"MINI_HARNESS_MODEL": "ignored"})
        assert provider.name == "MockProvider"
        assert local_providers["MockProvider"] == ["mock"]


class TestRequestLimits:
    @pytest.mark.parametrize(
        ("limits", "attempts"), [(None, 3), (RequestLimits(retries=0), 1)], ids=["default", "given"]
    )
    def test_the_limits_given_else_the_defaults(
        self, limits: RequestLimits | None, attempts: int
    ) -> None:
        """A failed request is tried again as `limits` say, else as the defaults do (2
        retries): MINI_HARNESS_MODEL_RETRIES and _TIMEOUT are the CLI's settings to read,
        and a value the library is not given cannot stop it."""
        with OpenAIWireServer() as server:
            server.script(*[Failure(500, "down")] * 3)
            env = {
                "OPENAI_API_KEY": "k",
                "OPENAI_BASE_URL": server.base_url,
                "MINI_HARNESS_MODEL_RETRIES": "0",
                "MINI_HARNESS_MODEL_TIMEOUT": "soon",
            }
            provider = choose_provider("openai:m", env, limits)
            with pytest.raises(ModelError, match="down"):
                provider.complete(HELLO)
            assert len(server.requests) == attempts


class TestModelSpec:
    def test_provider_alone_uses_its_default_model(self) -> None:
        """`--model deepseek` is DeepSeek's default model."""
        provider = choose_provider("deepseek", {"DEEPSEEK_API_KEY": "d"})
        assert provider.name == "deepseek:deepseek-v4-flash"

    def test_openai_compatible_local_server_needs_no_key(
        self, openai_server: OpenAIWireServer
    ) -> None:
        """`openai-compatible:MODEL` talks to OPENAI_BASE_URL, with or without a key."""
        openai_server.script(Turn(text="local"))
        provider = choose_provider(
            "openai-compatible:qwen3-coder", {"OPENAI_BASE_URL": openai_server.base_url}
        )
        assert provider.name == "openai-compatible:qwen3-coder"
        assert provider.complete(HELLO).message.content == "local"
        assert openai_server.requests[0].body["model"] == "qwen3-coder"

    def test_openai_compatible_without_base_url_is_an_error(self) -> None:
        """`openai-compatible:MODEL` without OPENAI_BASE_URL says what to set."""
        with pytest.raises(ProviderSetupError, match="needs OPENAI_BASE_URL"):
            choose_provider("openai-compatible:llama", {})

    @pytest.mark.parametrize(
        ("spec", "variable"),
        [
            ("openai:gpt-4o", "OPENAI_API_KEY"),
            ("deepseek:deepseek-v4-pro", "DEEPSEEK_API_KEY"),
            ("anthropic:claude-opus-5", "ANTHROPIC_API_KEY"),
        ],
    )
    def test_missing_key_names_the_variable(self, spec: str, variable: str) -> None:
        """A remote provider without its key says which variable to set."""
        with pytest.raises(ProviderSetupError, match=f"needs {variable}"):
            choose_provider(spec, {"OTHER": "x"})

    def test_unknown_provider_lists_the_known_ones(self) -> None:
        """An unknown provider name is refused with the list of known ones."""
        with pytest.raises(ProviderSetupError) as raised:
            choose_provider("gemini:pro", {})
        assert str(raised.value) == (
            "Unknown model provider 'gemini' in --model 'gemini:pro' "
            "(known: anthropic, deepseek, mock, openai, openai-compatible, script)"
        )

    def test_script_needs_a_file(self) -> None:
        """`--model script` without a file is refused with the expected form."""
        with pytest.raises(ProviderSetupError, match=r"script:path/to/script\.json"):
            choose_provider("script", {})

    def test_script_file_is_the_scripted_provider(
        self, local_providers: dict[str, list[object]]
    ) -> None:
        """`--model script:FILE` is the scripted provider, given FILE as a path."""
        provider = choose_provider("script:demo/run.json", {"OPENAI_API_KEY": "o"})
        assert provider.name == "ScriptProvider"
        assert local_providers["ScriptProvider"] == [Path("demo/run.json")]

    def test_mock_spec_with_a_model_name(self, local_providers: dict[str, list[object]]) -> None:
        """`--model mock` chooses the mock even when a key is set."""
        assert choose_provider("mock", {"OPENAI_API_KEY": "o"}).name == "MockProvider"
        assert local_providers["MockProvider"] == ["mock"]

    def test_missing_sdk_gives_the_install_line(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """When the provider's SDK is not installed, the error carries the install line."""
        real = importlib.util.find_spec

        def without_anthropic(name: str, *args: object) -> object:
            return None if name == "anthropic" else real(name)

        monkeypatch.setattr(importlib.util, "find_spec", without_anthropic)
        with pytest.raises(ProviderSetupError) as raised:
            choose_provider("anthropic:claude-haiku-4-5", {"ANTHROPIC_API_KEY": "a"})
        assert str(raised.value) == (
            "The anthropic provider needs the anthropic SDK: pip install 'mini-harness[anthropic]'"
        )

    def test_key_is_not_in_the_name_or_repr(self) -> None:
        """Neither the provider's name nor its repr shows the key."""
        provider = choose_provider("openai:gpt-4o", {"OPENAI_API_KEY": "sk-visible-nowhere"})
        assert "sk-visible-nowhere" not in provider.name + repr(provider)


class TestBaseUrl:
    @pytest.mark.parametrize(
        ("spec", "variable", "url"),
        [
            ("openai:gpt-4o", "OPENAI_BASE_URL", "::8000/v1"),
            ("openai-compatible:llama", "OPENAI_BASE_URL", "http://[::1"),
            ("deepseek", "DEEPSEEK_BASE_URL", "http://127.0.0.1:port/v1"),
            ("anthropic", "ANTHROPIC_BASE_URL", "ftp://example.com"),
            ("anthropic", "ANTHROPIC_BASE_URL", "http://exa mple.com"),
            ("openai:gpt-4o", "OPENAI_BASE_URL", "example.com/v1"),
        ],
    )
    def test_an_unusable_base_url_is_refused_when_chosen(
        self, spec: str, variable: str, url: str
    ) -> None:
        """A base URL the SDK could not use is refused as the provider is chosen, with the
        variable it came from, not a traceback from inside the SDK at the first request."""
        prefix = variable.removesuffix("_BASE_URL")
        with pytest.raises(ProviderSetupError) as raised:
            choose_provider(spec, {f"{prefix}_API_KEY": "k", variable: url})
        assert str(raised.value).startswith(f"{variable}={url!r}: ")

    def test_a_local_server_url_is_taken(self) -> None:
        """An http URL with a host and a port, an IPv6 one too, is a base URL."""
        for url in ("http://127.0.0.1:8000/v1", "http://[::1]:8080", "https://api.example/v1"):
            provider = choose_provider("openai:m", {"OPENAI_API_KEY": "k", "OPENAI_BASE_URL": url})
            assert provider.name == "openai:m"


class TestRemoteProvider:
    def test_choosing_makes_no_client(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """A remote provider is chosen with its name, model and key known, but its SDK's
        provider is made only when it sends its first request."""
        from mini_harness.agent.providers import openai_chat

        made: list[str] = []
        real = openai_chat.OpenAICompatibleProvider._connect

        def counted(self: openai_chat.OpenAICompatibleProvider, **options: Any) -> None:
            made.append(self.model)
            real(self, **options)

        monkeypatch.setattr(openai_chat.OpenAICompatibleProvider, "_connect", counted)
        provider = choose_provider("openai:gpt-4o", {"OPENAI_API_KEY": "sk-chosen"})
        assert (provider.name, provider.model) == ("openai:gpt-4o", "gpt-4o")
        assert choice.provider_secrets(provider) == ("sk-chosen",)
        assert made == []

    @pytest.mark.parametrize("enabled", [True, False])
    def test_the_collector_is_as_it_was_after_the_first_request(
        self, openai_server: OpenAIWireServer, enabled: bool
    ) -> None:
        """The cyclic collector, paused while the SDK loads, is back as the caller had it
        (on, or off) once the first request is answered."""
        openai_server.script(Turn(text="hi"))
        env = {"OPENAI_API_KEY": "k", "OPENAI_BASE_URL": openai_server.base_url}
        provider = choose_provider(None, env)
        was = gc.isenabled()
        (gc.enable if enabled else gc.disable)()
        try:
            assert provider.complete(HELLO).message.content == "hi"
            assert gc.isenabled() is enabled
        finally:
            (gc.enable if was else gc.disable)()
