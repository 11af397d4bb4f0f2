"""What a new user sets about the model server from the command line: a base URL that
misses (or repeats) `/v1` is named with its fix, and the timeout and retries of a model
request come from flags or the environment."""

from __future__ import annotations

import time

import pytest

from tests.agent.recorded_runs import invoke
from tests.agent.wire_servers import AnthropicWireServer, Failure, OpenAIWireServer, Stall


class TestBaseUrl:
    def test_openai_base_url_without_v1(self) -> None:
        """OPENAI_BASE_URL without /v1: the 404 names the URL tried and the base URL to set."""
        with OpenAIWireServer() as server:
            root = server.base_url.removesuffix("/v1")
            env: dict[str, str | None] = {"OPENAI_API_KEY": "k", "OPENAI_BASE_URL": root}
            result = invoke(["run", "Task", "--model", "openai:gpt-4o-mini"], env=env)
        assert result.exit_code == 1
        assert (
            f"Model request failed with HTTP 404 from {root}/chat/completions: no route for "
            f"/chat/completions (OpenAI-style servers answer under /v1: set OPENAI_BASE_URL "
            f"to {root}/v1)"
        ) in result.stderr

    def test_anthropic_base_url_with_v1(self) -> None:
        """ANTHROPIC_BASE_URL ending in /v1 (requests go to /v1/v1/messages): the 404 says
        to drop it."""
        with AnthropicWireServer() as server:
            env: dict[str, str | None] = {
                "ANTHROPIC_API_KEY": "k",
                "ANTHROPIC_BASE_URL": server.base_url + "/v1",
            }
            result = invoke(["run", "Task", "--model", "anthropic:claude-haiku-4-5"], env=env)
        assert result.exit_code == 1
        assert (
            f"HTTP 404 from {server.base_url}/v1/v1/messages: no route for /v1/v1/messages "
            f"(the SDK adds /v1 itself: set ANTHROPIC_BASE_URL without it ({server.base_url}))"
        ) in result.stderr


class TestRequestLimits:
    @pytest.mark.parametrize(
        ("flags", "env", "attempts"),
        [
            ([], {}, 3),
            (["--model-retries", "0"], {}, 1),
            ([], {"MINI_HARNESS_MODEL_RETRIES": "1"}, 2),
            (["--model-retries", "0"], {"MINI_HARNESS_MODEL_RETRIES": "1"}, 1),
        ],
        ids=["default", "flag", "environment", "flag-over-environment"],
    )
    def test_retries(self, flags: list[str], env: dict[str, str | None], attempts: int) -> None:
        """A failing server is tried 1 + retries times: the flag over the environment over
        the default (2)."""
        with OpenAIWireServer() as server:
            server.script(*[Failure(500, "down")] * 3)
            env = {**env, "OPENAI_API_KEY": "k", "OPENAI_BASE_URL": server.base_url}
            result = invoke(["run", "Task", "--model", "openai:m", *flags], env=env)
            assert result.exit_code == 1
            assert len(server.requests) == attempts

    def test_timeout_flag(self) -> None:
        """--model-timeout bounds how long a silent server is waited for."""
        with OpenAIWireServer() as server:
            server.script(Stall(10))
            env: dict[str, str | None] = {"OPENAI_API_KEY": "k", "OPENAI_BASE_URL": server.base_url}
            started = time.monotonic()
            result = invoke(
                ["run", "Task", "--model", "openai:m", "--model-timeout", "0.3",
                 "--model-retries", "0"],
                env=env,
            )  # fmt: skip
            took = time.monotonic() - started
        assert result.exit_code == 1
        assert "Model request timed out" in result.stderr
        assert took < 5

    @pytest.mark.parametrize(
        ("name", "value", "wanted"),
        [
            ("MINI_HARNESS_MODEL_TIMEOUT", "soon", "a number of seconds above 0"),
            ("MINI_HARNESS_MODEL_TIMEOUT", "0", "a number of seconds above 0"),
            ("MINI_HARNESS_MODEL_RETRIES", "-1", "a whole number, 0 or more"),
            ("MINI_HARNESS_MODEL_RETRIES", "1.5", "a whole number, 0 or more"),
        ],
    )
    def test_a_bad_variable_is_a_usage_error(self, name: str, value: str, wanted: str) -> None:
        """A variable that is not a usable number stops the run before any request."""
        env: dict[str, str | None] = {"OPENAI_API_KEY": "k", name: value}
        result = invoke(["run", "Task", "--model", "openai:m"], env=env)
        assert result.exit_code == 2
        assert f"{name}={value!r}: expected {wanted}" in result.stderr
