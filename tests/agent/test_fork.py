"""`mini-harness fork`: a new run from a recorded one as it stood before a step's request."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mini_harness.events import RunOrigin
from mini_harness.replay import agent_report, fold_agent_runs
from mini_harness.transcripts import verify_transcript
from tests.agent.recorded_runs import assert_valid_histories, invoke, write_script


def fork(log: Path, *args: str, answer: str = "Forked answer.") -> Any:
    model = write_script(log.parent / "fork.json", [{"text": answer}])
    return invoke(["fork", str(log), *args, "--model", model])


class TestFork:
    def test_same_prompt_without_instruction(self, readme_run: Path) -> None:
        """A fork before step 2 sends the very request the original sent at step 2."""
        result = fork(readme_run, "--at-step", "2")
        assert result.exit_code == 0, result.output
        original, forked = fold_agent_runs(readme_run)
        assert forked.forked_from == RunOrigin(original.run_id, 2)
        assert forked.steps[0].recorded_hash == original.steps[1].recorded_hash
        assert forked.final_text == "Forked answer."

    def test_instruction_is_added(self, readme_run: Path) -> None:
        """An instruction is a user message after the history of the fork point."""
        assert fork(readme_run, "--at-step", "3", "Answer in French.").exit_code == 0
        original, forked = fold_agent_runs(readme_run)
        sent = forked.steps[0].request.messages
        assert list(sent[:-1]) == list(original.steps[2].request.messages)
        assert (sent[-1].role, sent[-1].content) == ("user", "Answer in French.")
        assert forked.task == "Answer in French."

    def test_original_untouched(self, readme_run: Path, tmp_path: Path) -> None:
        """With --log OUT the fork goes to OUT and the original's bytes do not change."""
        before = readme_run.read_bytes()
        out = tmp_path / "forks" / "f.jsonl"
        assert fork(readme_run, "--at-step", "1", "--log", str(out)).exit_code == 0
        assert readme_run.read_bytes() == before
        (forked,) = fold_agent_runs(out)
        assert forked.forked_from is not None
        assert verify_transcript(out).problems() == []

    def test_appended_fork_keeps_the_original(self, readme_run: Path) -> None:
        """Appended to the same transcript, the fork leaves every earlier line as it was."""
        before = readme_run.read_bytes()
        assert fork(readme_run, "--at-step", "2").exit_code == 0
        assert readme_run.read_bytes().startswith(before)

    def test_fork_of_a_fork_folds_verifies_and_reports(self, readme_run: Path) -> None:
        """Forks of forks fold, verify, give valid histories and render context reports."""
        assert fork(readme_run, "--at-step", "2", "First.").exit_code == 0
        first = fold_agent_runs(readme_run)[1]
        assert fork(readme_run, "--at-step", "1", "Second.", "--run", first.run_id).exit_code == 0
        runs = fold_agent_runs(readme_run)
        assert runs[2].forked_from == RunOrigin(first.run_id, 1)
        report = verify_transcript(readme_run)
        assert (report.problems(), report.in_doubt) == ([], ())
        for run in runs:
            assert_valid_histories(run)
            assert agent_report(run).startswith("Context Explorer\n")


class TestRunTree:
    def test_replay_shows_the_tree(self, readme_run: Path) -> None:
        """`replay` shows which run forks or resumes which, indented under its origin."""
        assert fork(readme_run, "--at-step", "2", "First.").exit_code == 0
        original, first = fold_agent_runs(readme_run)
        assert fork(readme_run, "--at-step", "1", "--run", first.run_id).exit_code == 0
        model = write_script(readme_run.parent / "more.json", [{"text": "More."}])
        resumed = invoke(["resume", str(readme_run), "Go on", "--run", original.run_id,
                          "--model", model])  # fmt: skip
        assert resumed.exit_code == 0, resumed.output
        second, third = fold_agent_runs(readme_run)[2:]
        result = invoke(["replay", str(readme_run)])
        assert result.exit_code == 0, result.output
        tree = result.output[result.output.index("Agent runs:") :].splitlines()
        assert tree == [
            "Agent runs:",
            f"  {original.run_id} (3 steps, final)",
            f"    forked before step 2: {first.run_id} (1 step, final)",
            f"      forked before step 1: {second.run_id} (1 step, final)",
            f"    resumed after step 3: {third.run_id} (1 step, final)",
        ]

    def test_fork_elsewhere_names_its_origin(self, readme_run: Path, tmp_path: Path) -> None:
        """A fork written to another file is a root there that names the run it came from."""
        out = tmp_path / "f.jsonl"
        assert fork(readme_run, "--at-step", "1", "--log", str(out)).exit_code == 0
        original = fold_agent_runs(readme_run)[0]
        (forked,) = fold_agent_runs(out)
        result = invoke(["replay", str(out)])
        assert (
            f"  forked before step 1 of {original.run_id} (not in this transcript): "
            f"{forked.run_id} (1 step, final)"
        ) in result.output

    def test_no_tree_without_links(self, readme_run: Path) -> None:
        """A transcript whose runs continue nothing shows no tree."""
        assert "Agent runs:" not in invoke(["replay", str(readme_run)]).output


class TestErrors:
    def test_step_out_of_range(self, readme_run: Path) -> None:
        """A step the run never reached exits 2, naming the steps it made."""
        result = fork(readme_run, "--at-step", "9")
        assert result.exit_code == 2
        assert "has no step 9 (its steps are 1 to 3)" in result.output

    def test_at_step_is_required(self, readme_run: Path) -> None:
        """--at-step is required."""
        result = invoke(["fork", str(readme_run)])
        assert result.exit_code == 2
        assert "--at-step" in result.output
