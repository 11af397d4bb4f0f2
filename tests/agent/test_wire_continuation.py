"""Agent runs recorded through the real OpenAI SDK against the loopback wire server:
replayed offline with the server gone, and resumed through a server that refuses any
history a provider would refuse."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from mini_harness.replay import fold_agent_runs
from mini_harness.transcripts import verify_transcript
from tests.agent.recorded_runs import cut_after, invoke
from tests.agent.wire_servers import Failure, OpenAIWireServer, Turn

TURNS = (
    Turn(text="Looking.", tool_calls=(("c1", "list_files", "{}"),)),
    Turn(tool_calls=(("c2", "read_file", '{"path": "README.md"}'),)),
    Turn(text="A tiny project."),
)


def server_env(server: OpenAIWireServer) -> dict[str, str | None]:
    return {"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": server.base_url}


@pytest.fixture(name="recorded")
def _recorded(readme_ws: Path, tmp_path: Path) -> Path:
    """A three-step run recorded through the OpenAI SDK; the server is stopped after."""
    log = tmp_path / "t.jsonl"
    with OpenAIWireServer() as server:
        server.script(*TURNS)
        result = invoke(["run", "What is it?", "--model", "openai:gpt-4o-mini", "--log",
                         str(log)], env=server_env(server))  # fmt: skip
        assert result.exit_code == 0, result.output
        assert (server.unused, server.rejections) == (0, [])
    return log


class TestOfflineReplay:
    def test_replays_with_the_server_gone(self, recorded: Path) -> None:
        """The run replays identically with no server and no key."""
        result = invoke(["replay", str(recorded), "--rerun"])
        assert result.exit_code == 0, result.output
        assert "replayed: identical through step 3" in result.output

    def test_changed_file_diverges_at_the_right_step(self, recorded: Path, readme_ws: Path) -> None:
        """A README that says something else (same size) diverges the step after the read."""
        (readme_ws / "README.md").write_text("# Demo\nA huge project.\n")
        result = invoke(["replay", str(recorded), "--rerun"])
        assert result.exit_code == 1
        assert "diverged at step 3" in result.output


class TestResumeThroughTheServer:
    @pytest.mark.parametrize(
        ("event", "nth"),
        [("ModelRequested", 2), ("ToolCalled", 2), ("ToolSucceeded", 1), ("ModelResponded", 2)],
    )
    def test_resumed_history_is_accepted(
        self, recorded: Path, tmp_path: Path, event: str, nth: int
    ) -> None:
        """Cut anywhere, the resumed run's history passes the server's provider rules."""
        log = tmp_path / "cut.jsonl"
        cut_after(recorded, log, event, nth)
        with OpenAIWireServer() as server:
            server.script(Turn(text="Resumed."))
            result = invoke(["resume", str(log), "--model", "openai:gpt-4o-mini"],
                            env=server_env(server))  # fmt: skip
            assert result.exit_code == 0, result.output
            assert server.rejections == []
            assert len(server.requests) == 1
        assert fold_agent_runs(log)[-1].final_text == "Resumed."


class TestFaultsThroughTheServer:
    def test_every_failed_attempt_is_recorded(self, readme_ws: Path, tmp_path: Path) -> None:
        """A rate limit and a server error before the answer are each one ModelFailed, with
        the server's status and message and the attempt's number; the log verifies."""
        log = tmp_path / "t.jsonl"
        with OpenAIWireServer() as server:
            server.script(
                Failure(429, "Rate limit reached"),
                Failure(503, "Overloaded"),
                Turn(text="Done."),
            )
            result = invoke(["run", "Go.", "--model", "openai:gpt-4o-mini", "--log", str(log)],
                            env=server_env(server))  # fmt: skip
        assert result.exit_code == 0, result.output
        assert result.output.count("retrying") == 2
        events = [orjson.loads(line) for line in log.read_bytes().splitlines()]
        failed = [(e["attempt"], e["error"]) for e in events if e["type"] == "ModelFailed"]
        assert failed == [
            (1, {"kind": "rate_limited", "status": 429,
                 "message": "Model request failed with HTTP 429: Rate limit reached"}),
            (2, {"kind": "http_error", "status": 503,
                 "message": "Model request failed with HTTP 503: Overloaded"}),
        ]  # fmt: skip
        assert [e["type"] for e in events].count("ModelResponded") == 1
        assert verify_transcript(log).problems() == []
