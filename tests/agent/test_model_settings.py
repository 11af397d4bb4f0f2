"""What a new user sets about the model server: a base URL that misses (or repeats) `/v1` is
named with its fix, and the timeout and retries of a model request come from flags, the
environment or a config.toml (the user's or the project's), the first that says winning."""

from __future__ import annotations

import time
from pathlib import Path

import orjson
import pytest

from tests.agent.recorded_runs import invoke
from tests.agent.wire_servers import AnthropicWireServer, Failure, OpenAIWireServer, Stall, Turn
from tests.test_settings import project_config, user_config


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

    @pytest.mark.parametrize(
        ("flags", "named", "sent"),
        [
            ([], "gpt-4.1", "gpt-4.1"),
            (["--model", "openai"], "deepseek", "gpt-4o-mini"),
            (["--model", "openai"], "gpt-4.1", "gpt-4o-mini"),
            (["--model", "openai:o3"], "gpt-4.1", "o3"),
        ],
        ids=["name-alone", "flag-over-provider", "flag-over-name", "flag-names-model"],
    )
    def test_mini_harness_model(self, flags: list[str], named: str, sent: str) -> None:
        """MINI_HARNESS_MODEL names the model of the provider chosen otherwise, and
        `--model` wins over it: `--model openai` is OpenAI's default model whatever the
        variable holds."""
        with OpenAIWireServer() as server:
            server.script(Turn(text="done"))
            env: dict[str, str | None] = {
                "OPENAI_API_KEY": "k",
                "OPENAI_BASE_URL": server.base_url,
                "MINI_HARNESS_MODEL": named,
            }
            result = invoke(["run", "Task", "--no-log", *flags], env=env)
            assert result.exit_code == 0, result.output
            assert [request.body["model"] for request in server.requests] == [sent]

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
        assert f'{name} must be {wanted}, not "{value}"' in result.stderr


class TestRequestLimitsInConfig:
    @pytest.mark.parametrize(
        ("user", "project", "env", "flags", "attempts"),
        [
            ("model-retries = 0", "", {}, [], 1),
            ("model-retries = 0", "model-retries = 1", {}, [], 2),
            ("", "model-retries = 1", {"MINI_HARNESS_MODEL_RETRIES": "0"}, [], 1),
            ("model-retries = 1", "", {"MINI_HARNESS_MODEL_RETRIES": "0"},
             ["--model-retries", "2"], 3),
        ],
        ids=["user", "project-over-user", "environment-over-project", "flag-over-all"],
    )  # fmt: skip
    def test_retries(
        self,
        readme_ws: Path,
        user: str,
        project: str,
        env: dict[str, str | None],
        flags: list[str],
        attempts: int,
    ) -> None:
        """model-retries in a config file sets how often a failing server is tried: the
        flag over the environment over the project's file over the user's."""
        user_config(user)
        project_config(readme_ws, project)
        with OpenAIWireServer() as server:
            server.script(*[Failure(500, "down")] * 3)
            env = {**env, "OPENAI_API_KEY": "k", "OPENAI_BASE_URL": server.base_url}
            result = invoke(["run", "Task", "--model", "openai:m", "--no-log", *flags], env=env)
            assert result.exit_code == 1, result.output
            assert len(server.requests) == attempts

    def test_timeout_from_the_user_config(self, readme_ws: Path) -> None:
        """model-timeout in the user's config bounds how long a silent server is waited for."""
        user_config("model-timeout = 0.3\nmodel-retries = 0\n")
        with OpenAIWireServer() as server:
            server.script(Stall(10))
            env: dict[str, str | None] = {"OPENAI_API_KEY": "k", "OPENAI_BASE_URL": server.base_url}
            started = time.monotonic()
            result = invoke(["run", "Task", "--model", "openai:m", "--no-log"], env=env)
            took = time.monotonic() - started
        assert result.exit_code == 1
        assert "Model request timed out" in result.stderr
        assert took < 5

    def test_config_shows_each_with_its_source(self, readme_ws: Path) -> None:
        """`mini-harness config` prints both settings and where each came from."""
        result = invoke(["config", "--json"])
        settings = orjson.loads(result.stdout)["settings"]
        assert settings["model-timeout"] == {"value": 120.0, "source": "default"}
        assert settings["model-retries"] == {"value": 2, "source": "default"}
        user = user_config("model-timeout = 30\n")
        project = project_config(readme_ws, "model-retries = 5\n")
        result = invoke(["config"], env={"MINI_HARNESS_MODEL_TIMEOUT": "45.5"})
        assert result.exit_code == 0, result.output
        lines = result.stdout.splitlines()
        assert [line.split() for line in lines if line.startswith("model-")] == [
            ["model-timeout", "45.5", "environment", "MINI_HARNESS_MODEL_TIMEOUT"],
            ["model-retries", "5", "project", str(project)],
        ]
        lines = invoke(["config"]).stdout.splitlines()
        assert [line.split() for line in lines if line.startswith("model-timeout")] == [
            ["model-timeout", "30", "user", str(user)]
        ]

    @pytest.mark.parametrize(
        ("text", "message"),
        [
            ("model-timeout = 'soon'", 'a number of seconds above 0, not "soon"'),
            ("model-timeout = 0", "a number of seconds above 0, not 0"),
            ("model-timeout = true", "a number of seconds above 0, not true"),
            ("model-retries = -1", "a whole number, 0 or more, not -1"),
            ("model-retries = 1.5", "a whole number, 0 or more, not 1.5"),
        ],
    )
    def test_a_bad_value_is_exit_2_naming_file_key_and_expectation(
        self, readme_ws: Path, text: str, message: str
    ) -> None:
        """A bad value in either file stops `config` and a run with exit 2, before any
        request, naming the file, the key and what was expected."""
        for write in (user_config, lambda text: project_config(readme_ws, text)):
            path = write(text + "\n")
            for args in (["config"], ["run", "Task", "--model", "mock", "--no-log"]):
                result = invoke(args)
                assert result.exit_code == 2, result.output
                key = text.partition(" ")[0]
                assert f"[mini-harness] Error: {path}: {key} must be {message}" in result.stderr
            path.unlink()
