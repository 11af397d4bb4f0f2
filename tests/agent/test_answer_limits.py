"""Answers a model should not give, given anyway: tool-call ids used twice, and an answer
too large for the transcript. Neither may make the run, or every later request and
resume, fail."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from mini_harness.agent import Message, ToolCall, check_history
from mini_harness.events import ModelFailed, ModelResponded, RunFinished, ToolCalled
from mini_harness.replay import fold_agent_runs
from mini_harness.transcripts import read_transcript, verify_transcript
from tests.agent.recorded_runs import cut_after, invoke, write_script
from tests.agent.wire_servers import AnthropicWireServer, OpenAIWireServer, Turn, WireServer

SERVERS: dict[str, tuple[type[WireServer], str, str]] = {
    "openai": (OpenAIWireServer, "OPENAI", "openai:gpt-4o-mini"),
    "anthropic": (AnthropicWireServer, "ANTHROPIC", "anthropic:claude-haiku-4-5"),
}

SAME_ANSWER = (  # two calls of one answer with one id
    Turn(tool_calls=(("dup", "list_files", "{}"), ("dup", "read_file", '{"path": "README.md"}'))),
    Turn(text="Read it."),
)
ACROSS_STEPS = (  # the id of step 1's call used again at step 2
    Turn(tool_calls=(("dup", "list_files", "{}"),)),
    Turn(tool_calls=(("dup", "read_file", '{"path": "README.md"}'),)),
    Turn(text="Read it."),
)


def events(log: Path, kind: type) -> list:  # type: ignore[type-arg]
    return [r.event for r in read_transcript(log) if isinstance(r.event, kind)]


class TestDuplicateToolCallIds:
    @pytest.mark.parametrize(
        ("wire", "turns"),
        [("openai", SAME_ANSWER), ("anthropic", SAME_ANSWER), ("anthropic", ACROSS_STEPS)],
    )
    def test_each_call_gets_an_id_of_its_own(
        self, readme_ws: Path, tmp_path: Path, wire: str, turns: tuple[Turn, ...]
    ) -> None:
        """Both calls run under ids of their own (`dup`, `dup-2`), recorded in the answer
        and in each ToolCalled, and the next request is one the server accepts."""
        server_class, prefix, model = SERVERS[wire]
        log = tmp_path / "t.jsonl"
        with server_class() as server:
            server.script(*turns)
            env: dict[str, str | None] = {
                f"{prefix}_API_KEY": "k",
                f"{prefix}_BASE_URL": server.base_url,
            }
            result = invoke(["run", "What is it?", "--model", model, "--log", str(log)], env)
            assert result.exit_code == 0, result.output
            assert (server.rejections, server.unused) == ([], 0)
        answered = [c.id for e in events(log, ModelResponded) for c in e.message.tool_calls]
        assert answered == ["dup", "dup-2"]
        called = [(e.name, e.tool_use_id) for e in events(log, ToolCalled)]
        assert called == [("list_files", "dup"), ("read_file", "dup-2")]
        (run,) = fold_agent_runs(log)
        assert all(step.hash_matches for step in run.steps)
        assert check_history(run.steps[-1].request.messages) == []

    def test_a_resume_after_them_is_accepted(self, readme_ws: Path, tmp_path: Path) -> None:
        """Cut between the two calls, the run resumes through a server that refuses
        duplicate ids: the second call runs, and the request is accepted."""
        full, log = tmp_path / "full.jsonl", tmp_path / "t.jsonl"
        with AnthropicWireServer() as server:
            server.script(*SAME_ANSWER)
            env: dict[str, str | None] = {
                "ANTHROPIC_API_KEY": "k",
                "ANTHROPIC_BASE_URL": server.base_url,
            }
            model = "anthropic:claude-haiku-4-5"
            assert (
                invoke(["run", "What?", "--model", model, "--log", str(full)], env).exit_code == 0
            )
            cut_after(full, log, "ToolSucceeded", 1)
            server.script(Turn(text="Resumed."))
            result = invoke(["resume", str(log), "--model", model], env)
            assert result.exit_code == 0, result.output
            assert server.rejections == []
        assert fold_agent_runs(log)[-1].final_text == "Resumed."

    def test_check_history_finds_them(self) -> None:
        """A history with one id twice, in one answer or across two, is not valid."""
        call = ToolCall("x", "echo", "{}")
        answered = [Message("assistant", "", (call,)), Message("tool", "ok", tool_call_id="x")]
        twice = [Message("system", "s"), Message("user", "u"), *answered, *answered]
        assert check_history(twice) == ["message 5 (assistant): tool call id 'x' is used again"]
        both = [Message("system", "s"), Message("assistant", "", (call, call))]
        assert "tool call id 'x' is used again" in check_history(both)[0]


class TestAnswerOverTheLineCap:
    def test_recorded_as_a_model_failure(self, readme_ws: Path, tmp_path: Path) -> None:
        """An answer larger than --max-event-bytes ends the run as a model failure of its
        own kind (exit 1, `model_error`), nothing of it acted on, and the log verifies."""
        log = tmp_path / "t.jsonl"
        calls = [{"name": "run_command", "arguments": {"argv": ["rm", "README.md"]}}]
        model = write_script(tmp_path / "big.json", [{"text": "x" * 20_000, "toolCalls": calls}])
        result = invoke(["run", "Task", "--model", model, "--log", str(log), "--approve",
                         "auto", "--max-event-bytes", "8192"])  # fmt: skip
        assert result.exit_code == 1, result.output
        assert "model answer not recorded" in result.output
        (failed,) = events(log, ModelFailed)
        assert failed.error.kind == "response_too_large"
        assert "over the 8192-byte event size cap" in failed.error.message
        (finished,) = events(log, RunFinished)
        assert finished.stop_reason == "model_error"
        assert events(log, ToolCalled) == []
        assert (readme_ws / "README.md").exists()
        assert verify_transcript(log).problems() == []

    def test_a_request_over_the_cap_is_never_sent(self, readme_ws: Path, tmp_path: Path) -> None:
        """A request that cannot be recorded (a large tool result in it) is not sent: the run
        ends as out of budget (exit 1) with the step not counted, and the log verifies."""
        (readme_ws / "README.md").write_text("y" * 20_000)
        log = tmp_path / "t.jsonl"
        read = {"name": "read_file", "arguments": {"path": "README.md"}}
        reads: list[dict[str, Any]] = [{"toolCalls": [read]}, {"text": "Never asked."}]
        model = write_script(tmp_path / "reads.json", reads)
        result = invoke(["run", "Task", "--model", model, "--log", str(log),
                         "--max-event-bytes", "8192", "--json"])  # fmt: skip
        assert result.exit_code == 1, result.output
        document = orjson.loads(result.stdout)
        assert (document["stopReason"], document["steps"]) == ("budget", 1)
        assert "the next request cannot be recorded" in result.output
        assert verify_transcript(log).problems() == []
