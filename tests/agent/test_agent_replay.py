"""`replay --rerun` on agent runs: recorded answers, tools run again, the step where the run
would have gone another way."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from mini_harness.cli.registry_spec import agent_registry
from mini_harness.events import RunOrigin
from mini_harness.replay import fold_agent_runs, replay_agent_run, rerun_transcript
from mini_harness.transcripts import verify_transcript
from tests.agent.recorded_runs import (
    counting_registry,
    cut_after,
    executions,
    invoke,
    write_script,
)


class TestDivergence:
    def test_identical(self, readme_run: Path) -> None:
        """Unchanged tools replay every step identically, with no model and no key."""
        result = invoke(["replay", str(readme_run), "--rerun"])
        assert result.exit_code == 0, result.output
        assert "Step 1: list_files {}: re-run, same result" in result.output
        assert result.output.rstrip().endswith("replayed: identical through step 3")

    def test_changed_file_diverges_after_the_read(self, readme_run: Path, readme_ws: Path) -> None:
        """A file the read tool read now says something else: the run diverges at the step
        whose request carries that result, and the diff shows the change."""
        (readme_ws / "README.md").write_text("# Demo\nA huge project.\n")  # same size
        result = invoke(["replay", str(readme_run), "--rerun"])
        assert result.exit_code == 1
        assert "Step 2: read_file" in result.output
        assert "diverged at step 3: 1 tool result differs from the recorded" in result.output
        assert '-  "text": "# Demo\\nA tiny project.\\n"' in result.output
        assert '+  "text": "# Demo\\nA huge project.\\n"' in result.output

    def test_new_file_diverges_after_the_listing(self, readme_run: Path, readme_ws: Path) -> None:
        """A new file changes the listing of step 1, so the run diverges at step 2."""
        (readme_ws / "NEW.md").write_text("new\n")
        result = invoke(["replay", str(readme_run), "--rerun"])
        assert result.exit_code == 1
        assert "diverged at step 2" in result.output
        assert '+      "path": "NEW.md",' in result.output

    def test_json(self, readme_run: Path, readme_ws: Path) -> None:
        """--json gives the diverging step, the diffs and how each call got its result."""
        (readme_ws / "README.md").write_text("# Demo\nA huge project.\n")
        result = invoke(["replay", str(readme_run), "--rerun", "--json"])
        assert result.exit_code == 1
        (document,) = orjson.loads(result.stdout)["agentRuns"]
        assert (document["identicalThrough"], document["divergedAt"]) == (2, 3)
        assert [call["how"] for call in document["calls"]] == ["re-run", "re-run"]
        assert [call["same"] for call in document["calls"]] == [True, False]
        # Each call's outcome in the words of a call-by-call re-run.
        assert [call["outcome"] for call in document["calls"]] == ["matched", "diverged"]

    def test_run_by_index_or_id(self, readme_run: Path) -> None:
        """--run picks one run by its 1-based index among all runs, or by an id prefix."""
        assert invoke(["--tool", "echo", "--tool-input", '{"text": "x"}', "--log",
                       str(readme_run)]).exit_code == 0  # fmt: skip
        (agent_run,) = fold_agent_runs(readme_run)
        for run in ("1", agent_run.run_id[:8]):
            result = invoke(["replay", str(readme_run), "--rerun", "--run", run])
            assert "replayed: identical through step 3" in result.output
        tool_run = invoke(["replay", str(readme_run), "--rerun", "--run", "2"])
        assert "Replaying agent run" not in tool_run.output
        assert "echo" in tool_run.output

    def test_record_cut_short(self, readme_run: Path, tmp_path: Path) -> None:
        """A run killed after step 2's tools replays identically as far as it went; the
        unfinished run is a problem of the log, as in any replay (exit 1)."""
        cut = tmp_path / "cut.jsonl"
        cut_after(readme_run, cut, "ToolSucceeded", 2)
        result = invoke(["replay", str(cut), "--rerun"])
        assert result.exit_code == 1, result.output
        assert "identical through step 2 (the record has no answer after it)" in result.output
        assert "[in-doubt] line 2: agent run" in result.output
        assert "is unfinished: no RunFinished" in result.output


class TestBothReRunsAgree:
    def test_an_output_too_large_to_record_matches_in_both(self, tmp_path: Path) -> None:
        """A read whose output was over the event size cap is recorded as its size and
        SHA-256: read again unchanged, the offline replay and the call-by-call re-run both
        say it matched (the replay compared the marker's text with the whole output)."""
        ws = tmp_path / "ws"
        ws.mkdir()
        (ws / "big.txt").write_text("x" * 5000 + "\n")
        script = write_script(
            tmp_path / "s.json",
            [{"toolCalls": [{"name": "read_file", "arguments": {"path": "big.txt"}}]}],
        )
        log = tmp_path / "t.jsonl"
        args = ["--workspace", str(ws), "run", "Read it.", "--model", script]
        invoke([*args, "--log", str(log), "--max-event-bytes", "3000"])
        (run,) = fold_agent_runs(log)
        (recorded,) = run.calls
        assert recorded.output["bytes"] == 5089  # recorded as the marker
        offline = replay_agent_run(run, agent_registry(ws))
        call_by_call = rerun_transcript(log, agent_registry(ws))
        assert [c.outcome for c in offline.calls] == ["matched"]
        assert [c.outcome for c in call_by_call.outcomes] == ["matched"]
        shown = invoke(["replay", str(log), "--rerun", "--workspace", str(ws)])
        assert 'Step 1: read_file {"path":"big.txt"}: re-run, same result' in shown.output

    def test_an_input_recorded_redacted_is_not_sent_again(self, tmp_path: Path) -> None:
        """A path holding a secret was recorded as `[REDACTED].txt`: neither re-run sends
        that to the tool (it would test a file the model never named); both serve or skip
        it, saying why."""
        ws = tmp_path / "ws"
        ws.mkdir()
        (ws / "hunter2.txt").write_text("hi\n")
        script = write_script(
            tmp_path / "s.json",
            [{"toolCalls": [{"name": "read_file", "arguments": {"path": "hunter2.txt"}}]}],
        )
        log = tmp_path / "t.jsonl"
        args = ["--workspace", str(ws), "run", "Read it.", "--model", script, "--log", str(log)]
        invoke([*args, "--redact-env", "MY_SECRET"], env={"MY_SECRET": "hunter2"})
        (run,) = fold_agent_runs(log)
        offline = replay_agent_run(run, agent_registry(ws))
        call_by_call = rerun_transcript(log, agent_registry(ws))
        why = "input not recorded: redacted"
        assert [(c.outcome, c.reason) for c in offline.calls] == [("skipped", why)]
        assert [(c.outcome, c.reason) for c in call_by_call.outcomes] == [("skipped", why)]
        shown = invoke(["replay", str(log), "--rerun", "--workspace", str(ws)])
        assert f'[REDACTED].txt"}}: served from the record ({why})' in shown.output


class TestSideEffects:
    @pytest.fixture(name="counted")
    def _counted(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> tuple[Path, str, Path, Path]:
        monkeypatch.chdir(tmp_path)
        spec, side_file, note = counting_registry(tmp_path)
        responses: list[dict[str, Any]] = [
            {"toolCalls": [{"name": "slow", "arguments": {"n": 1}}]},
            {"toolCalls": [{"name": "look", "arguments": {"n": 2}}]},
            {"text": "Done."},
        ]
        log = tmp_path / "c.jsonl"
        model = write_script(tmp_path / "c.json", responses)
        result = invoke(["run", "Task", "--model", model, "--registry", spec, "--log", str(log),
                         "--approve", "auto"])  # fmt: skip
        assert result.exit_code == 0, result.output
        side_file.unlink()
        return log, spec, side_file, note

    def test_side_effects_served_from_the_record(
        self, counted: tuple[Path, str, Path, Path]
    ) -> None:
        """A tool with side effects is not run again: its recorded result is served."""
        log, spec, side_file, _ = counted
        result = invoke(["replay", str(log), "--rerun", "--registry", spec])
        assert result.exit_code == 0, result.output
        assert 'Step 1: slow {"n":1}: served from the record (slow is not marked' in (result.output)
        assert executions(side_file) == {"look 2": 1}

    def test_side_effects_never_recorded_are_not_run(
        self, counted: tuple[Path, str, Path, Path], tmp_path: Path
    ) -> None:
        """A call with side effects the recorded run never got to is not run either."""
        log, spec, side_file, _ = counted
        cut = tmp_path / "cut.jsonl"
        cut_after(log, cut, "ModelResponded", 1)
        result = invoke(["replay", str(cut), "--rerun", "--registry", spec])
        assert result.exit_code == 1, result.output  # the cut run is in doubt
        assert (
            'Step 1: slow {"n":1}: not run (slow is not marked readOnlyHint or idempotentHint '
            "(--allow-side-effects runs it)); the record has no result for it"
        ) in result.output
        assert executions(side_file) == {}

    def test_allow_side_effects(self, counted: tuple[Path, str, Path, Path]) -> None:
        """--allow-side-effects runs every tool again."""
        log, spec, side_file, _ = counted
        result = invoke(["replay", str(log), "--rerun", "--registry", spec,
                         "--allow-side-effects", "--approve", "auto"])  # fmt: skip
        assert result.exit_code == 0, result.output
        assert executions(side_file) == {"slow 1": 1, "look 2": 1}

    def test_live_model_continues_as_a_fork(self, counted: tuple[Path, str, Path, Path]) -> None:
        """With --live-model the configured provider goes on from the diverging step, as a
        new run forked from the replayed one, appended to the transcript."""
        log, spec, _, note = counted
        note.write_text("second version\n")
        model = write_script(log.parent / "live.json", [{"text": "Live answer."}])
        result = invoke(["replay", str(log), "--rerun", "--registry", spec, "--live-model",
                         "--model", model])  # fmt: skip
        assert result.exit_code == 0, result.output
        assert "diverged at step 3" in result.output
        assert "Live answer." in result.output
        original, live = fold_agent_runs(log)
        assert live.forked_from == RunOrigin(original.run_id, 3)
        sent = live.steps[0].request.messages
        assert "second version" in sent[-1].content
        assert verify_transcript(log).problems() == []

    def test_live_model_calls_are_approved(self, counted: tuple[Path, str, Path, Path]) -> None:
        """The live model's calls pass the approval policy, as in `run`: with no terminal to
        ask, a tool with side effects is refused, and its handler never runs."""
        log, spec, side_file, note = counted
        note.write_text("second version\n")
        answers: list[dict[str, Any]] = [
            {"toolCalls": [{"name": "slow", "arguments": {"n": 9}}]},
            {"text": "ok"},
        ]
        model = write_script(log.parent / "live.json", answers)
        result = invoke(["replay", str(log), "--rerun", "--registry", spec, "--live-model",
                         "--model", model])  # fmt: skip
        assert result.exit_code == 0, result.output
        assert executions(side_file) == {"look 2": 1}  # the replay's read, nothing else
        live = fold_agent_runs(log)[-1]
        assert live.steps[1].request.messages[-1].is_error

    def test_live_model_not_needed(self, counted: tuple[Path, str, Path, Path]) -> None:
        """A replay that matches to its final answer asks no live model and adds no run."""
        log, spec, _, _ = counted
        before = log.read_bytes()
        model = write_script(log.parent / "live.json", [{"text": "Live answer."}])
        result = invoke(["replay", str(log), "--rerun", "--registry", spec, "--live-model",
                         "--model", model])  # fmt: skip
        assert result.exit_code == 0, result.output
        assert log.read_bytes() == before

    def test_live_model_needs_rerun(self, readme_run: Path) -> None:
        """--live-model without --rerun is a usage error."""
        result = invoke(["replay", str(readme_run), "--live-model"])
        assert result.exit_code == 2
        assert "--live-model needs --rerun" in result.output
