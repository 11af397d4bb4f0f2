"""Agent runs recorded through the real OpenAI SDK against the loopback wire server:
replayed offline with the server gone, and resumed through a server that refuses any
history a provider would refuse."""

from __future__ import annotations

from pathlib import Path

import pytest

from mini_harness.replay.fold import fold_agent_runs
from tests.agent.recorded_runs import cut_after, invoke
from tests.agent.wire_servers import OpenAIWireServer, Turn

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
