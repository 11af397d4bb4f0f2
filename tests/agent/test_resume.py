"""`mini-harness resume`: a run cut short anywhere continues as a new run, with no tool
call run twice and a history every provider accepts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from mini_harness.agent import INTERRUPTED_RESULT
from mini_harness.events import RunOrigin, ToolError
from mini_harness.replay import agent_report, fold_agent_runs
from mini_harness.transcripts import verify_transcript
from tests.agent.recorded_runs import (
    assert_valid_histories,
    counting_registry,
    cut_after,
    executions,
    invoke,
    run_by_id,
    write_script,
)

RESPONSES: list[dict[str, Any]] = [
    {"text": "Looking.", "toolCalls": [{"name": "look", "arguments": {"n": 1}}]},
    {
        "toolCalls": [
            {"name": "slow", "arguments": {"n": 2}},
            {"name": "slow", "arguments": {"n": 3}},
        ]
    },
    {"text": "Done."},
]


class Recorded:
    """A full three-step run recorded with the counting tools; the side file emptied."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.spec, self.side_file, self.note = counting_registry(directory)
        self.full = directory / "full.jsonl"
        model = write_script(directory / "script.json", RESPONSES)
        result = invoke(["run", "Task", "--model", model, "--registry", self.spec,
                         "--log", str(self.full), "--approve", "auto"])  # fmt: skip
        assert result.exit_code == 0, result.output
        self.side_file.unlink()
        self.run = fold_agent_runs(self.full)[0]

    def resume(
        self,
        log: Path,
        *args: str,
        responses: list[dict[str, Any]] | None = None,
        approve: str = "auto",
    ) -> Any:
        model = write_script(self.directory / "resume.json", responses or [{"text": "Done."}])
        return invoke(["resume", str(log), *args, "--model", model, "--registry", self.spec,
                       "--approve", approve])  # fmt: skip


@pytest.fixture(name="recorded")
def _recorded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Recorded:
    monkeypatch.chdir(tmp_path)
    return Recorded(tmp_path)


def new_run(log: Path) -> Any:
    return fold_agent_runs(log)[-1]


class TestRebuiltHistory:
    def test_cut_between_steps(self, recorded: Recorded, tmp_path: Path) -> None:
        """Cut after step 2's tool results, the resumed run sends exactly the request the
        uninterrupted run sent at step 3, and runs no tool again."""
        log = tmp_path / "t.jsonl"
        cut_after(recorded.full, log, "ToolSucceeded", 3)
        result = recorded.resume(log)
        assert result.exit_code == 0, result.output
        resumed = new_run(log)
        assert resumed.resumed_from == RunOrigin(recorded.run.run_id, 2)
        assert resumed.steps[0].recorded_hash == recorded.run.steps[2].recorded_hash
        assert (resumed.stop_reason, resumed.final_text) == ("final", "Done.")
        assert executions(recorded.side_file) == {}

    def test_request_in_doubt_is_sent_again(self, recorded: Recorded, tmp_path: Path) -> None:
        """A request recorded but never answered is sent again, the same request."""
        log = tmp_path / "t.jsonl"
        cut_after(recorded.full, log, "ModelRequested", 2)
        assert recorded.resume(log).exit_code == 0
        resumed = new_run(log)
        assert resumed.steps[0].recorded_hash == recorded.run.steps[1].recorded_hash
        assert executions(recorded.side_file) == {}

    def test_call_in_doubt_is_closed_as_interrupted(
        self, recorded: Recorded, tmp_path: Path
    ) -> None:
        """A call in doubt is recorded as interrupted, the model is told so, it is not run
        again; the call after it, never begun, runs once in the new run."""
        log = tmp_path / "t.jsonl"
        cut_after(recorded.full, log, "ToolCalled", 2)  # slow n=2 begun, never ended
        result = recorded.resume(log)
        assert result.exit_code == 0, result.output
        assert "as interrupted" in result.output
        old = run_by_id(log, recorded.run.run_id)
        closed = old.steps[1].calls[0]
        assert closed.error == ToolError("interrupted", INTERRUPTED_RESULT.format(name="slow"))
        resumed = new_run(log)
        sent = resumed.steps[0].request.messages
        assert sent[-2].is_error
        assert sent[-2].content == INTERRUPTED_RESULT.format(name="slow")
        assert sent[-1].tool_call_id == "call_2_2"
        assert not sent[-1].is_error
        assert executions(recorded.side_file) == {"slow 3": 1}
        report = verify_transcript(log)
        assert (report.problems(), report.in_doubt) == ([], ())
        assert_valid_histories(resumed)

    @pytest.mark.parametrize(("retry", "expected"), [(False, {}), (True, {"look 1": 1})])
    def test_retry_in_doubt(
        self, recorded: Recorded, tmp_path: Path, retry: bool, expected: dict[str, int]
    ) -> None:
        """A read-only call in doubt runs again only with --retry-in-doubt."""
        log = tmp_path / "t.jsonl"
        cut_after(recorded.full, log, "ToolCalled", 1)  # look n=1 begun, never ended
        args = ["--retry-in-doubt"] if retry else []
        responses = [RESPONSES[1], RESPONSES[2]]
        assert recorded.resume(log, *args, responses=responses).exit_code == 0
        got = executions(recorded.side_file)
        assert {k: v for k, v in got.items() if k.startswith("look")} == expected
        assert got["slow 2"] == got["slow 3"] == 1
        assert_valid_histories(new_run(log))

    def test_side_effects_are_never_retried(self, recorded: Recorded, tmp_path: Path) -> None:
        """A call in doubt of a tool with side effects is not run again, even when asked."""
        log = tmp_path / "t.jsonl"
        cut_after(recorded.full, log, "ToolCalled", 2)
        assert recorded.resume(log, "--retry-in-doubt").exit_code == 0
        assert executions(recorded.side_file) == {"slow 3": 1}

    def test_leftover_calls_go_through_the_approval_policy(
        self, recorded: Recorded, tmp_path: Path
    ) -> None:
        """A call the resumed run dispatches is approved like any other: refused here."""
        log = tmp_path / "t.jsonl"
        cut_after(recorded.full, log, "ToolCalled", 2)
        assert recorded.resume(log, approve="never").exit_code == 0
        assert executions(recorded.side_file) == {}
        sent = new_run(log).steps[0].request.messages
        assert sent[-1].tool_call_id == "call_2_2"
        assert sent[-1].is_error

    def test_killed_before_the_first_request(self, recorded: Recorded, tmp_path: Path) -> None:
        """A run that never sent a request resumes from its task."""
        log = tmp_path / "t.jsonl"
        cut_after(recorded.full, log, "RunStarted", 1)
        assert recorded.resume(log).exit_code == 0
        assert new_run(log).steps[0].recorded_hash == recorded.run.steps[0].recorded_hash


class TestChains:
    def test_resume_killed_before_its_first_request(
        self, recorded: Recorded, tmp_path: Path
    ) -> None:
        """A resumed run killed while it ran a leftover call resumes from the run it
        continued: that call is closed as interrupted too, and nothing runs twice."""
        first = tmp_path / "first.jsonl"
        cut_after(recorded.full, first, "ToolCalled", 2)  # slow n=2 in doubt, n=3 not begun
        assert recorded.resume(first).exit_code == 0  # runs slow n=3
        second = tmp_path / "second.jsonl"
        cut_after(first, second, "ToolCalled", 3)  # ... killed during slow n=3
        assert executions(recorded.side_file) == {"slow 3": 1}
        result = recorded.resume(second)
        assert result.exit_code == 0, result.output
        runs = fold_agent_runs(second)
        assert runs[-1].resumed_from == RunOrigin(runs[1].run_id, 0)
        sent = runs[-1].steps[0].request.messages
        assert [m.content for m in sent[-2:]] == [INTERRUPTED_RESULT.format(name="slow")] * 2
        assert executions(recorded.side_file) == {"slow 3": 1}
        report = verify_transcript(second)
        assert (report.problems(), report.in_doubt) == ([], ())
        assert_valid_histories(runs[-1])

    def test_retried_call_in_a_later_run_counts(self, recorded: Recorded, tmp_path: Path) -> None:
        """A call retried by a resumed run that then died gets the retried result."""
        first = tmp_path / "first.jsonl"
        cut_after(recorded.full, first, "ToolCalled", 1)  # look n=1 in doubt
        responses = [RESPONSES[1], RESPONSES[2]]
        assert recorded.resume(first, "--retry-in-doubt", responses=responses).exit_code == 0
        second = tmp_path / "second.jsonl"
        cut_after(first, second, "ToolSucceeded", 1)  # the retried look ended, then killed
        result = recorded.resume(second, responses=responses)
        assert result.exit_code == 0, result.output
        sent = fold_agent_runs(second)[-1].steps[0].request.messages
        assert sent[-1].role == "tool"
        assert not sent[-1].is_error
        assert "first version" in sent[-1].content


class TestFinishedRuns:
    def test_follow_up(self, recorded: Recorded) -> None:
        """A run that answered goes on with a follow-up task, as a new run."""
        result = recorded.resume(recorded.full, "Say more", responses=[{"text": "More."}])
        assert result.exit_code == 0, result.output
        assert "More." in result.output
        resumed = new_run(recorded.full)
        assert resumed.task == "Say more"
        sent = resumed.steps[0].request.messages
        assert [m.role for m in sent[-2:]] == ["assistant", "user"]
        assert (sent[-2].content, sent[-1].content) == ("Done.", "Say more")
        assert resumed.resumed_from == RunOrigin(recorded.run.run_id, 3)

    def test_answer_without_run_finished(self, recorded: Recorded, tmp_path: Path) -> None:
        """A run killed after its final answer was recorded ends with that answer, without
        asking the model again."""
        log = tmp_path / "t.jsonl"
        cut_after(recorded.full, log, "ModelResponded", 3)
        result = recorded.resume(log)
        assert result.exit_code == 0, result.output
        resumed = new_run(log)
        assert (resumed.steps, resumed.final_text, resumed.stop_reason) == ([], "Done.", "final")

    def test_chain_folds_verifies_and_reports(self, recorded: Recorded) -> None:
        """A chain of resumed runs verifies, and every run's context report renders."""
        for follow_up in ("One", "Two"):
            assert recorded.resume(recorded.full, follow_up).exit_code == 0
        runs = fold_agent_runs(recorded.full)
        assert [run.resumed_from.run_id if run.resumed_from else None for run in runs] == [
            None,
            runs[0].run_id,
            runs[1].run_id,
        ]
        report = verify_transcript(recorded.full)
        assert (report.problems(), report.in_doubt) == ([], ())
        for run in runs:
            assert agent_report(run).startswith("Context Explorer\n")
            assert_valid_histories(run)


class TestOutput:
    def test_json(self, recorded: Recorded) -> None:
        """--json prints one document: the new run, where it came from, how it ended."""
        result = recorded.resume(recorded.full, "More?", "--json", responses=[{"text": "Yes."}])
        assert result.exit_code == 0, result.output
        document = orjson.loads(result.stdout)
        assert document["resumedFrom"] == {"runId": recorded.run.run_id, "step": 3}
        assert (document["stopReason"], document["finalText"], document["steps"]) == (
            "final",
            "Yes.",
            1,
        )

    def test_no_final_answer_is_exit_1(self, recorded: Recorded) -> None:
        """A resumed run that ends without an answer exits 1, as `run` does."""
        calls = [{"toolCalls": [{"name": "look", "arguments": {"n": 9}}]}]
        result = recorded.resume(recorded.full, "Again", "--max-steps", "1", responses=calls)
        assert result.exit_code == 1
        assert "stopped after 1 step(s) without a final answer" in result.output


class TestTornTail:
    def test_torn_tail_is_set_aside(self, recorded: Recorded, tmp_path: Path) -> None:
        """A torn tail is moved aside before the run is read, and said so on stderr."""
        log = tmp_path / "t.jsonl"
        cut_after(recorded.full, log, "ToolSucceeded", 1)
        with log.open("ab") as handle:
            handle.write(b'{"type":"ToolCalled","seq":9')
        result = recorded.resume(log, responses=[RESPONSES[1], RESPONSES[2]])
        assert result.exit_code == 0, result.output
        assert "torn tail" in result.output
        assert list(tmp_path.glob("t.jsonl.torn-*"))
        assert verify_transcript(log).problems() == []


class TestErrors:
    @pytest.mark.parametrize(
        ("args", "message"),
        [
            (["resume", "missing.jsonl"], "cannot read transcript missing.jsonl"),
            (["resume", "tools.jsonl"], "tools.jsonl has no agent run"),
            (["resume", "full.jsonl", "--run", "nope"], "full.jsonl has no run nope (it has 1 run"),
        ],
    )
    def test_usage_errors(self, recorded: Recorded, args: list[str], message: str) -> None:
        """What cannot be resumed exits 2 with the reason."""
        assert invoke(["--tool", "echo", "--tool-input", '{"text":"x"}', "--log",
                       "tools.jsonl"]).exit_code == 0  # fmt: skip
        result = invoke(args)
        assert result.exit_code == 2
        assert message in result.output


class TestInDoubtCalls:
    def test_retry_never_repeats_a_finished_call(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """With --retry-in-doubt, of two read-only calls of one answer only the one in doubt
        runs again; the one that had finished keeps its recorded result."""
        monkeypatch.chdir(tmp_path)
        spec, side_file, _ = counting_registry(tmp_path)
        full, log = tmp_path / "full.jsonl", tmp_path / "t.jsonl"
        both = [{"name": "look", "arguments": {"n": 1}}, {"name": "look", "arguments": {"n": 2}}]
        looks: list[dict[str, Any]] = [{"toolCalls": both}, {"text": "Done."}]
        model = write_script(tmp_path / "script.json", looks)
        assert invoke(["run", "Task", "--model", model, "--registry", spec, "--log",
                       str(full)]).exit_code == 0  # fmt: skip
        cut_after(full, log, "ToolCalled", 2)  # look 1 ended, look 2 in doubt
        side_file.unlink()
        rest = write_script(tmp_path / "rest.json", [{"text": "Done."}])
        result = invoke(["resume", str(log), "--retry-in-doubt", "--model", rest,
                         "--registry", spec])  # fmt: skip
        assert result.exit_code == 0, result.output
        assert executions(side_file) == {"look 2": 1}
        sent = new_run(log).steps[0].request.messages
        assert [(m.tool_call_id, m.is_error) for m in sent[-2:]] == [
            ("call_1_1", False),
            ("call_1_2", False),
        ]

    def test_a_call_in_doubt_before_the_first_request_is_closed(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A run killed during its `--tool` call (before any request) resumes from its
        task, and that call, outside any step, is closed as interrupted too."""
        monkeypatch.chdir(tmp_path)
        spec, side_file, _ = counting_registry(tmp_path)
        full, log = tmp_path / "full.jsonl", tmp_path / "t.jsonl"
        model = write_script(tmp_path / "script.json", [{"text": "Done."}])
        assert invoke(["run", "Task", "--tool", "slow", "--tool-input", '{"n": 7}', "--model",
                       model, "--registry", spec, "--log", str(full), "--approve",
                       "auto"]).exit_code == 0  # fmt: skip
        cut_after(full, log, "ToolCalled", 1)
        call_id = verify_transcript(log).in_doubt[0].call_id
        result = recorded_resume(log, spec, tmp_path)
        assert result.exit_code == 0, result.output
        assert f"Closed in-doubt call {call_id} (slow) as interrupted" in result.output
        report = verify_transcript(log)
        assert (report.problems(), report.in_doubt) == ([], ())
        assert executions(side_file) == {"slow 7": 1}  # the first run's, never again


def recorded_resume(log: Path, spec: str, directory: Path) -> Any:
    rest = write_script(directory / "rest.json", [{"text": "Done."}])
    return invoke(["resume", str(log), "--model", rest, "--registry", spec])
