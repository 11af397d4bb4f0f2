"""A configured provider's API key is never printed by replay, a re-run or show, whichever
model (if any) the command uses: not from the transcript, not from what a tool returns
today, not from a live model's answer; as is, upper-cased or a character off."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner, Result

from mini_harness import ToolRuntime
from mini_harness.cli import cli
from mini_harness.transcripts import JsonlTranscript
from tests.replay import registries

KEY = "sk-proj-Q7fLm2Xc9VbN4tRz8KdW1yHs6JpE3uGa5"
COPIES = (KEY, KEY.upper(), KEY[:20] + "x" + KEY[21:])
NO_KEYS: dict[str, str | None] = dict.fromkeys(
    ("DEEPSEEK_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "MINI_HARNESS_MODEL")
)
WITH_KEY = {**NO_KEYS, "OPENAI_API_KEY": KEY}


def cli_run(args: list[str], env: dict[str, str | None]) -> Result:
    return CliRunner().invoke(cli, args, env=env)


def assert_hidden(text: str) -> None:
    for copy in COPIES:
        assert copy.lower() not in text.lower(), text


def script(path: Path, responses: list[dict[str, Any]]) -> str:
    path.write_bytes(orjson.dumps(responses))
    return f"script:{path}"


@pytest.fixture(name="recorded")
def _recorded(readme_ws: Path, tmp_path: Path) -> Path:
    """An agent run recorded where no key was configured, so the transcript holds the key
    a model echoed (in a call's input and in its answer); the README it read holds the key
    today, so a re-run's result differs from the record by it."""
    log = tmp_path / "t.jsonl"
    responses: list[dict[str, Any]] = [
        {"toolCalls": [{"name": "echo", "arguments": {"text": f"key={KEY}"}}]},
        {"toolCalls": [{"name": "read_file", "arguments": {"path": "README.md"}}]},
        {"text": f"The key is {KEY.upper()}."},
    ]
    model = script(tmp_path / "s.json", responses)
    assert cli_run(["run", "Go.", "--model", model, "--log", str(log)], NO_KEYS).exit_code == 0
    (readme_ws / "README.md").write_text(f"# Demo\nA huge project, key {COPIES[2]}.\n")
    return log


class TestReplayAndShow:
    @pytest.mark.parametrize(
        "args",
        [
            ["replay", "{log}"],
            ["replay", "{log}", "--json"],
            ["replay", "{log}", "--rerun"],
            ["replay", "{log}", "--rerun", "--json"],
            ["show", "{log}"],
            ["show", "{log}", "--full"],
            ["show", "{log}", "--json"],
            ["transcript", "verify", "{log}"],
        ],
        ids=[
            "fold",
            "fold-json",
            "rerun",
            "rerun-json",
            "show",
            "show-full",
            "show-json",
            "verify",
        ],
    )
    def test_the_configured_key_is_never_printed(self, recorded: Path, args: list[str]) -> None:
        """Every copy of the configured key is redacted, on stdout and on stderr."""
        result = cli_run([arg.format(log=recorded) for arg in args], WITH_KEY)
        assert_hidden(result.output)

    def test_live_model_never_prints_or_records_the_key(
        self, recorded: Path, tmp_path: Path
    ) -> None:
        """`replay --rerun --live-model` with a scripted model: the offline part (calls,
        diffs), the live answer and the run it appends hold no copy of the key."""
        size = recorded.stat().st_size
        live = script(tmp_path / "live.json", [{"text": f"Still {KEY}."}])
        for as_json in ([], ["--json"]):
            result = cli_run(["replay", str(recorded), "--rerun", "--live-model", "--model",
                              live, *as_json], WITH_KEY)  # fmt: skip
            assert result.exit_code == 0, result.output
            assert "diverged at step 3" in result.output or as_json
            assert "[REDACTED]" in result.output
            assert_hidden(result.output)
        assert_hidden(recorded.read_bytes()[size:].decode())

    def test_call_by_call_rerun_never_prints_the_key(self, readme_ws: Path) -> None:
        """A tool run's re-run diff (the key upper-cased by today's echo) is redacted."""
        log = readme_ws / "tools.jsonl"
        with JsonlTranscript(log) as sink:
            ToolRuntime(registries.recording(), sink).dispatch("echo", {"text": KEY})
        for as_json in ([], ["--json"]):
            result = cli_run(["replay", str(log), "--rerun", "--registry",
                              "tests.replay.registries:upper", *as_json], WITH_KEY)  # fmt: skip
            assert result.exit_code == 1, result.output
            assert_hidden(result.output)
            assert "[REDACTED]" in result.output
