"""The agent loop: steps, tool calls through the runtime, events that rebuild every request."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from mini_harness.agent import (
    AgentConfig,
    AgentLoop,
    AgentOutcome,
    Message,
    ModelRequest,
    ModelResponse,
    ScriptProvider,
    Usage,
    load_project_rules,
)
from mini_harness.errors import ModelError
from mini_harness.events import (
    ModelFailed,
    ModelFailure,
    ModelIdentity,
    ModelRequested,
    ModelResponded,
    RunFinished,
    RunStarted,
    ToolCalled,
)
from mini_harness.replay import fold_agent_runs
from mini_harness.runtime import MemorySink, ToolRuntime
from mini_harness.tools import default_registry
from mini_harness.transcripts import JsonlTranscript, TranscriptReader, verify_transcript
from tests.agent.recorded_runs import LIST_READ_ANSWER

Script = Callable[[list[dict[str, Any]]], Path]


class RecordingProvider:
    """Wraps a provider and keeps every request it was sent."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.name = inner.name
        self.model = inner.model
        self.requests: list[ModelRequest] = []

    def complete(self, request: ModelRequest, **kwargs: Any) -> ModelResponse:
        self.requests.append(request)
        response: ModelResponse = self.inner.complete(request, **kwargs)
        return response


def run_logged(
    log: Path, workspace: Path, provider: Any, **config: Any
) -> tuple[AgentOutcome, ToolRuntime]:
    config.setdefault("task", "What is this project?")
    with JsonlTranscript(log) as sink:
        runtime = ToolRuntime(default_registry(workspace), sink)
        outcome = AgentLoop(runtime, provider, AgentConfig(**config)).run()
    return outcome, runtime


def events(log: Path) -> list[Any]:
    return [record.event for record in TranscriptReader(log)]


class TestScriptedRun:
    def test_list_read_answer(self, tmp_path: Path, workspace: Path, write_script: Script) -> None:
        """A scripted run lists files, reads one and answers, in three steps."""
        provider = ScriptProvider(write_script(LIST_READ_ANSWER))
        outcome, _ = run_logged(tmp_path / "t.jsonl", workspace, provider)
        assert (outcome.stop_reason, outcome.final_text, outcome.steps) == (
            "final",
            "A tiny project.",
            3,
        )
        assert provider.unused() == ()

    def test_transcript_verifies(
        self, tmp_path: Path, workspace: Path, write_script: Script
    ) -> None:
        """The transcript of an agent run verifies: chain, protocol, no call in doubt."""
        log = tmp_path / "t.jsonl"
        run_logged(log, workspace, ScriptProvider(write_script(LIST_READ_ANSWER)))
        report = verify_transcript(log)
        assert report.ok
        assert report.in_doubt == ()
        assert report.version == 2
        assert report.unknown_types == ()

    def test_fold_rebuilds_every_request(
        self, tmp_path: Path, workspace: Path, write_script: Script
    ) -> None:
        """Folding the events gives back exactly the requests the model was sent."""
        log = tmp_path / "t.jsonl"
        provider = RecordingProvider(ScriptProvider(write_script(LIST_READ_ANSWER)))
        run_logged(log, workspace, provider, rules=load_project_rules(workspace))
        (run,) = fold_agent_runs(log)
        assert [step.request for step in run.steps] == provider.requests
        assert all(step.hash_matches for step in run.steps)
        assert (run.stop_reason, run.final_text, run.task) == (
            "final",
            "A tiny project.",
            "What is this project?",
        )
        assert [rule.path for rule in run.rules] == ["AGENTS.md"]

    def test_requests_record_only_new_messages(
        self, tmp_path: Path, workspace: Path, write_script: Script
    ) -> None:
        """Each ModelRequested holds only the messages added since the previous request."""
        log = tmp_path / "t.jsonl"
        run_logged(log, workspace, ScriptProvider(write_script(LIST_READ_ANSWER)))
        requested = [e for e in events(log) if isinstance(e, ModelRequested)]
        assert [[m.role for m in e.messages] for e in requested] == [
            ["system", "user"],
            ["assistant", "tool"],
            ["assistant", "tool"],
        ]

    def test_tool_calls_link_to_the_model(
        self, tmp_path: Path, workspace: Path, write_script: Script
    ) -> None:
        """ToolCalled carries the model's id for the call and the step that made it."""
        log = tmp_path / "t.jsonl"
        run_logged(log, workspace, ScriptProvider(write_script(LIST_READ_ANSWER)))
        calls = [(e.name, e.tool_use_id, e.step) for e in events(log) if isinstance(e, ToolCalled)]
        assert calls == [("list_files", "call_1_1", 1), ("read_file", "call_2_1", 2)]

    def test_run_started_records_the_agent(
        self, tmp_path: Path, workspace: Path, write_script: Script
    ) -> None:
        """RunStarted holds the task, model, system prompt, rules and step limit."""
        log = tmp_path / "t.jsonl"
        script = write_script(LIST_READ_ANSWER)
        rules = load_project_rules(workspace)
        run_logged(log, workspace, ScriptProvider(script), rules=rules, max_steps=5)
        started = next(e for e in events(log) if isinstance(e, RunStarted))
        assert started.task == "What is this project?"
        assert started.model == ModelIdentity(f"script:{script}", script.name)
        assert started.max_steps == 5
        assert started.project_rules == (rules[0],)


class TestFailedCalls:
    def test_bad_calls_go_back_to_the_model(
        self, tmp_path: Path, write_script: Script, workspace: Path
    ) -> None:
        """Unknown tools, invalid input and unparsable arguments come back as error results."""
        script = write_script(
            [
                {
                    "toolCalls": [
                        {"name": "nope", "arguments": {}},
                        {"name": "read_file", "arguments": {"path": 3}},
                        {"name": "read_file", "arguments": '{"path": "README'},
                    ]
                },
                {"text": "done"},
            ]
        )
        provider = RecordingProvider(ScriptProvider(script))
        log = tmp_path / "t.jsonl"
        outcome, _ = run_logged(log, workspace, provider)
        assert outcome.stop_reason == "final"
        results = [m for m in provider.requests[1].messages if m.role == "tool"]
        assert [(m.tool_call_id, m.is_error) for m in results] == [
            ("call_1_1", True),
            ("call_1_2", True),
            ("call_1_3", True),
        ]
        (run,) = fold_agent_runs(log)
        assert [step.request for step in run.steps] == provider.requests
        assert results[0].content.startswith("Unknown tool: nope. Registered tools: echo, ")
        assert results[1].content == "Invalid input for read_file.path: expected string"
        assert results[2].content.startswith("Invalid arguments for read_file: not valid JSON")

    def test_unparsable_arguments_stay_raw_in_the_history(
        self, tmp_path: Path, write_script: Script, workspace: Path
    ) -> None:
        """The neutral history keeps arguments that do not parse as the model sent them (the
        providers send them in a form their servers accept), and so does the transcript."""
        raw = '{"path": "README'
        script = write_script(
            [{"toolCalls": [{"name": "read_file", "arguments": raw}]}, {"text": "ok"}]
        )
        provider = RecordingProvider(ScriptProvider(script))
        log = tmp_path / "t.jsonl"
        run_logged(log, workspace, provider)
        assistant = provider.requests[1].messages[2]
        assert assistant.tool_calls[0].arguments == raw
        responded = next(e for e in events(log) if isinstance(e, ModelResponded))
        assert responded.message.tool_calls[0].arguments == raw
        called = next(e for e in events(log) if isinstance(e, ToolCalled))
        assert called.input == raw

    def test_every_call_gets_one_result(self, write_script: Script, workspace: Path) -> None:
        """Every tool call of every response has exactly one tool result after it."""
        calls = [{"name": "list_files", "arguments": {}}, {"name": "x", "arguments": "["}]
        script = write_script([{"toolCalls": calls}, {"toolCalls": calls}, {"text": "end"}])
        provider = RecordingProvider(ScriptProvider(script))
        runtime = ToolRuntime(default_registry(workspace), MemorySink())
        AgentLoop(runtime, provider, AgentConfig(task="t")).run()
        history = provider.requests[-1].messages
        asked = [c.id for m in history for c in m.tool_calls]
        answered = [m.tool_call_id or "" for m in history if m.role == "tool"]
        assert sorted(asked) == sorted(answered)
        assert len(set(answered)) == len(answered)


class TestStops:
    def test_max_steps(self, tmp_path: Path, write_script: Script, workspace: Path) -> None:
        """A model that never stops calling tools is stopped at --max-steps."""
        call = {"toolCalls": [{"name": "list_files", "arguments": {}}]}
        log = tmp_path / "t.jsonl"
        outcome, _ = run_logged(
            log, workspace, ScriptProvider(write_script([call] * 5)), max_steps=2
        )
        assert (outcome.stop_reason, outcome.steps, outcome.final_text) == ("max_steps", 2, None)
        finished = events(log)[-1]
        assert isinstance(finished, RunFinished)
        assert (finished.stop_reason, finished.steps) == ("max_steps", 2)

    def test_script_runs_out(self, tmp_path: Path, write_script: Script, workspace: Path) -> None:
        """Asking a script for more responses than it has ends the run with model_error."""
        call = {"toolCalls": [{"name": "list_files", "arguments": {}}]}
        log = tmp_path / "t.jsonl"
        outcome, _ = run_logged(log, workspace, ScriptProvider(write_script([call])))
        assert outcome.stop_reason == "model_error"
        assert outcome.error is not None
        assert "has 1 response; the run asked for response 2" in outcome.error
        failed = [e for e in events(log) if isinstance(e, ModelFailed)]
        assert [f.error.kind for f in failed] == ["invalid_response"]

    def test_retries_are_recorded(self, tmp_path: Path, workspace: Path) -> None:
        """Each failed attempt the provider retried is recorded as ModelFailed."""

        class Flaky:
            name = model = "flaky"

            def complete(self, request: ModelRequest, **kwargs: Any) -> ModelResponse:
                kwargs["on_retry"](ModelError("rate_limited", "slow down", status=429, attempt=1))
                return ModelResponse(Message("assistant", "fine"), "stop", Usage(10, 2))

        log = tmp_path / "t.jsonl"
        outcome, _ = run_logged(log, workspace, Flaky())
        assert outcome.stop_reason == "final"
        kinds = [type(e).__name__ for e in events(log)][2:]
        assert kinds == ["ModelRequested", "ModelFailed", "ModelResponded", "RunFinished"]
        failed = next(e for e in events(log) if isinstance(e, ModelFailed))
        assert failed.error == ModelFailure("rate_limited", 429, "slow down")

    def test_interrupt_during_request(self, tmp_path: Path, workspace: Path) -> None:
        """Ctrl-C while waiting for the model ends the run as cancelled, cleanly recorded."""

        class Interrupted:
            name = model = "interrupted"

            def complete(self, request: ModelRequest, **kwargs: Any) -> ModelResponse:
                raise KeyboardInterrupt

        log = tmp_path / "t.jsonl"
        outcome, _ = run_logged(log, workspace, Interrupted())
        assert outcome.stop_reason == "cancelled"
        tail = events(log)[-2:]
        assert isinstance(tail[0], ModelFailed)
        assert tail[0].error.kind == "cancelled"
        assert isinstance(tail[1], RunFinished)
        assert tail[1].stop_reason == "cancelled"
        assert verify_transcript(log).ok

    @pytest.mark.parametrize("raised", [SystemExit(3), GeneratorExit()])
    def test_base_exception_from_a_handler_finishes_the_run(
        self, tmp_path: Path, write_script: Script, workspace: Path, raised: BaseException
    ) -> None:
        """A handler raising SystemExit or GeneratorExit ends the run as cancelled in the log
        (RunFinished is written, the transcript verifies) and the exception goes on up."""
        registry = default_registry(workspace)

        def abrupt(data: Any) -> Any:
            raise raised

        registry.add(
            "abrupt", abrupt, description="Ends abruptly.", input_schema={"type": "object"}
        )
        script = write_script([{"toolCalls": [{"name": "abrupt", "arguments": {}}]}])
        log = tmp_path / "t.jsonl"
        with JsonlTranscript(log) as sink:
            loop = AgentLoop(ToolRuntime(registry, sink), ScriptProvider(script), AgentConfig("t"))
            with pytest.raises(type(raised)):
                loop.run()
        last = events(log)[-1]
        assert isinstance(last, RunFinished)
        assert (last.stop_reason, last.steps) == ("cancelled", 1)
        assert verify_transcript(log).ok

    @pytest.mark.parametrize("raised", [SystemExit(3), GeneratorExit()])
    def test_base_exception_from_a_provider_finishes_the_request(
        self, tmp_path: Path, workspace: Path, raised: BaseException
    ) -> None:
        """A provider raising SystemExit ends its request with ModelFailed `cancelled` and the
        run with RunFinished `cancelled`, then the exception goes on up."""

        class Abrupt:
            name = model = "abrupt"

            def complete(self, request: ModelRequest, **kwargs: Any) -> ModelResponse:
                raise raised

        log = tmp_path / "t.jsonl"
        with pytest.raises(type(raised)):
            run_logged(log, workspace, Abrupt())
        failed, finished = events(log)[-2:]
        assert isinstance(failed, ModelFailed)
        assert failed.error.kind == "cancelled"
        assert isinstance(finished, RunFinished)
        assert finished.stop_reason == "cancelled"
        assert verify_transcript(log).ok

    def test_usage_is_summed(self, tmp_path: Path, write_script: Script, workspace: Path) -> None:
        """RunFinished holds the usage summed over the responses that reported it."""
        script = write_script(
            [
                {"toolCalls": [{"name": "list_files"}], "usage": {"inputTokens": 100}},
                {"text": "a", "usage": {"inputTokens": 150, "outputTokens": 5}},
            ]
        )
        outcome, _ = run_logged(tmp_path / "t.jsonl", workspace, ScriptProvider(script))
        assert outcome.usage == Usage(250, 5, None)


class TestGrowth:
    def test_transcript_grows_linearly(
        self, tmp_path: Path, write_script: Script, workspace: Path
    ) -> None:
        """A 200-step run writes about the same number of bytes for every step."""
        call = {"toolCalls": [{"name": "echo", "arguments": {"text": "x" * 50}}]}
        script = write_script([call] * 199 + [{"text": "done"}])
        log = tmp_path / "t.jsonl"
        outcome, _ = run_logged(log, workspace, ScriptProvider(script), max_steps=200)
        assert (outcome.stop_reason, outcome.steps) == ("final", 200)
        lines = log.read_bytes().splitlines(keepends=True)
        starts = [i for i, line in enumerate(lines) if line.startswith(b'{"type":"ModelRequested"')]
        first_half = sum(len(line) for line in lines[starts[1] : starts[100]])
        second_half = sum(len(line) for line in lines[starts[100] : starts[199]])
        assert abs(second_half - first_half) < 0.02 * first_half
        assert len(lines[starts[199]]) < 1.1 * len(lines[starts[1]])


class TestBudget:
    def test_old_tool_results_are_trimmed(
        self, tmp_path: Path, write_script: Script, workspace: Path
    ) -> None:
        """Over the budget, the oldest tool results become placeholders; the fold agrees."""
        (workspace / "big.txt").write_text("word " * 600)
        read = {"toolCalls": [{"name": "read_file", "arguments": {"path": "big.txt"}}]}
        script = write_script([read, read, read, {"text": "done"}])
        provider = RecordingProvider(ScriptProvider(script))
        log = tmp_path / "t.jsonl"
        outcome, _ = run_logged(log, workspace, provider, max_context_tokens=3_500)
        assert outcome.stop_reason == "final"
        last = provider.requests[-1].messages
        tool_results = [m.content for m in last if m.role == "tool"]
        assert tool_results[0].startswith("[tool result trimmed to fit the context budget:")
        assert not tool_results[-1].startswith("[tool result trimmed")
        assert last[1] == Message("user", "What is this project?")
        (run,) = fold_agent_runs(log)
        assert [s.request for s in run.steps] == provider.requests
        assert all(s.hash_matches for s in run.steps)
        assert run.budget == 3_500  # a trim recorded it

    def test_stop_when_nothing_more_can_go(
        self, tmp_path: Path, write_script: Script, workspace: Path
    ) -> None:
        """A budget the fixed parts alone exceed stops the run with `budget`, unsent."""
        script = write_script([{"text": "never"}])
        log = tmp_path / "t.jsonl"
        outcome, _ = run_logged(log, workspace, ScriptProvider(script), max_context_tokens=10)
        assert (outcome.stop_reason, outcome.steps) == ("budget", 0)
        assert not any(isinstance(e, ModelRequested) for e in events(log))


SLOW_RUN = """
import sys, time
from mini_harness import ToolRegistry, ToolRuntime
from mini_harness.agent.loop import AgentConfig, AgentLoop
from mini_harness.agent.providers.script import ScriptProvider
from mini_harness.transcripts import JsonlTranscript

registry = ToolRegistry()
registry.add("slow", lambda data: time.sleep(60) or {}, description="Sleeps.",
             input_schema={"type": "object"})
with JsonlTranscript(sys.argv[1], fsync="never") as sink:
    runtime = ToolRuntime(registry, sink)
    AgentLoop(runtime, ScriptProvider(sys.argv[2]), AgentConfig(task="wait")).run()
"""


class TestKilled:
    def test_killed_mid_tool(self, tmp_path: Path, write_script: Script) -> None:
        """SIGKILL during a tool leaves the call in doubt and the run unfinished."""
        import subprocess
        import sys
        import time

        script = write_script([{"toolCalls": [{"name": "slow", "arguments": {}}]}, {"text": "x"}])
        log = tmp_path / "t.jsonl"
        process = subprocess.Popen([sys.executable, "-c", SLOW_RUN, str(log), str(script)])
        try:
            deadline = time.monotonic() + 60
            while b'"type":"ToolCalled"' not in (log.read_bytes() if log.exists() else b""):
                assert time.monotonic() < deadline, "the run never called its tool"
                assert process.poll() is None, "the run ended before its tool was called"
                time.sleep(0.05)
        finally:
            process.kill()
            process.wait()
        report = verify_transcript(log)
        assert (report.damaged, report.integrity, report.protocol) == ((), (), ())
        assert [call.name for call in report.in_doubt] == ["slow"]
        (run,) = fold_agent_runs(log)
        assert not run.finished
        assert len(run.in_doubt_calls) == 1
        assert [s.number for s in run.steps] == [1]


V1_FIXTURE = Path(__file__).resolve().parents[1] / "transcripts" / "fixtures" / "v1-echo.jsonl"


class TestVersionOne:
    def test_agent_run_appended_to_a_v1_file(
        self, tmp_path: Path, workspace: Path, write_script: Script
    ) -> None:
        """A version-1 transcript takes an agent run: its lines are upcast, the run folds."""
        log = tmp_path / "old.jsonl"
        log.write_bytes(V1_FIXTURE.read_bytes())
        run_logged(log, workspace, ScriptProvider(write_script(LIST_READ_ANSWER)))
        reader = TranscriptReader(log)
        records = list(reader)
        assert reader.header is not None
        assert reader.header.version == 1
        assert reader.problems == []
        assert any(isinstance(r.event, ModelResponded) for r in records)
        (run,) = fold_agent_runs(log)
        assert run.stop_reason == "final"
        assert all(step.hash_matches for step in run.steps)


class TestFailureMessages:
    def test_a_provider_message_that_says_it_failed_is_not_said_twice(
        self, tmp_path: Path, workspace: Path
    ) -> None:
        """ "Model request failed with HTTP 500" is the error as it is, not after "model
        request failed: " again."""

        class Failing:
            name = model = "failing"

            def complete(self, request: ModelRequest, **kwargs: Any) -> ModelResponse:
                raise ModelError("server_error", "Model request failed with HTTP 500: boom")

        outcome, _ = run_logged(tmp_path / "t.jsonl", workspace, Failing())
        assert outcome.stop_reason == "model_error"
        assert outcome.error == "Model request failed with HTTP 500: boom"
